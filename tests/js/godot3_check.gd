# Run by tests/test_sprite_consumers.py inside a throw-away Godot 3 project: loads the SpriteFrames
# .tres we wrote and prints what Godot understood as one "RESULT {json}" line.
extends SceneTree
func _init():
    var frames = load("res://sheet.godot3.tres")
    var out = {"class": frames.get_class(), "animations": []}
    for name in frames.get_animation_names():
        var regions = []
        for i in range(frames.get_frame_count(name)):
            var tex = frames.get_frame(name, i)
            regions.append([tex.region.position.x, tex.region.position.y, tex.region.size.x, tex.region.size.y, tex.get_width(), tex.get_height(), tex.atlas.get_width()])
        out["animations"].append({"name": name, "speed": frames.get_animation_speed(name), "loop": frames.get_animation_loop(name), "regions": regions})
    if frames.has_meta("root_motion"):
        var root = {}
        var meta = frames.get_meta("root_motion")
        for name in meta:
            var points = []
            for v in meta[name]:
                points.append([v.x, v.y])
            root[name] = points
        out["root_motion"] = root
    print("RESULT " + to_json(out))
    quit()
