"""Direction sets: each action seen from 4, 8 or a listed set of directions, one named clip each.

A direction is where the character faces **on screen**, named by compass point as top-down and
isometric engines name their animations: ``e`` faces screen-right, ``s`` faces the viewer (down the
screen), ``n`` faces away, ``w`` screen-left, ``se`` down-right and so on.  A clip is named
``<action>_<direction>`` (``walk_e``, ``walk_se``, …): a name says what it shows, so game code looks
it up by name and nothing depends on an index convention (engines disagree on where 0 is).  The sets
are listed clockwise from east, ``e, se, s, sw, w, nw, n, ne``: the order of screen angles in y-down
engines (Godot's ``Vector2.angle()``, Phaser's ``Math.Angle``), so ``names[round(angle / 45°) % 8]``
picks the clip for a velocity; the four-direction set is ``e, s, w, n``.

The camera stays on the viewer's side and the character turns: facing ``s`` is the Pose Camera's
``front`` (azimuth 0), ``e`` its ``side_right`` (90), ``n`` ``back`` (180), ``w`` ``side_left`` (270),
``se`` ``three_quarter`` (45).  The directions are 45° apart around the rig's own facing in the ground
plane (raised by the camera's elevation for isometric views), so left and right stay the rig's own.

Every clip of a set (all actions, all directions) is framed with one scale: the largest image-plane
extent of any of them, so the character has one size on the sheet, as sprites of one character must.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ...core.errors import InputError
from .camera import ORBIT, plane_extent, view_angles
from .conditions import CameraSettings
from .skeleton import Pose3D
from .training_clips import VIEW_WORDS

COMPASS = ("e", "se", "s", "sw", "w", "nw", "n", "ne")  # clockwise from east on a y-down screen
DIRECTION_SETS = {"8": COMPASS, "4": ("e", "s", "w", "n")}
LISTED = "list"
DIRECTION_CHOICES = (*DIRECTION_SETS, LISTED)
# The training-clip view words (also VC2's prompt words) for each compass point, for per-direction prompts.
COMPASS_VIEWS = {
    "e": "side_right",
    "se": "front_right",
    "s": "front",
    "sw": "front_left",
    "w": "side_left",
    "nw": "back_left",
    "n": "back",
    "ne": "back_right",
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Direction:
    """A named direction and the camera azimuth that shows the character facing it."""

    name: str
    azimuth: float


@dataclass
class DirectionClip:
    """One (action, direction) of a set: the clip's name, its motion and the camera that draws it."""

    name: str
    action: str
    direction: Direction
    pose: Pose3D
    camera: CameraSettings

    def prompt(self, template: str) -> str:
        """``template`` with ``{view}`` (e.g. "back view"), ``{direction}`` and ``{action}`` filled in."""
        return (
            template.replace("{view}", view_words(self.direction.azimuth))
            .replace("{direction}", self.direction.name)
            .replace("{action}", self.action)
        )


def compass_azimuth(name: str) -> float:
    """Camera azimuth (degrees from the character's front towards its right) that shows it facing ``name``."""
    screen_angle = 45.0 * COMPASS.index(name)  # clockwise from east, y-down
    return (90.0 - screen_angle) % 360.0


def view_words(azimuth: float) -> str:
    """Prompt words for the nearest of the eight compass views ("side view", "back view", …)."""
    nearest = min(COMPASS, key=lambda n: abs((compass_azimuth(n) - azimuth + 180.0) % 360.0 - 180.0))
    return VIEW_WORDS[COMPASS_VIEWS[nearest]]


def parse_directions(choice: str, listed: str = "") -> list[Direction]:
    """The directions of ``choice`` (``8``, ``4``) or of ``listed`` when ``choice`` is ``list``.

    ``listed`` is comma-separated compass points (``s, e, n, w``) or ``name=azimuth`` pairs for other
    angles (``e, back=180, a30=30``; the azimuth in degrees from the character's front towards its right).
    """
    if choice in DIRECTION_SETS:
        return [Direction(n, compass_azimuth(n)) for n in DIRECTION_SETS[choice]]
    if choice != LISTED:
        raise InputError(f"Unknown direction set {choice!r}; choose one of {', '.join(DIRECTION_CHOICES)}.")
    found: list[Direction] = []
    for token in (t.strip() for t in listed.split(",")):
        if not token:
            continue
        name, _, angle = (part.strip() for part in token.partition("="))
        if not _NAME.match(name):
            raise InputError(f"Direction {name!r}: use letters, digits, _ or - (e.g. ne, or back=180).")
        if angle:
            try:
                azimuth = float(angle) % 360.0
            except ValueError:
                raise InputError(
                    f"Direction {token!r}: the azimuth after '=' must be degrees, e.g. {name}=135."
                ) from None
        elif name.lower() in COMPASS:
            name, azimuth = name.lower(), compass_azimuth(name.lower())
        else:
            raise InputError(
                f"Direction {name!r} is not a compass point ({', '.join(COMPASS)}); give its angle as {name}=<degrees>."
            )
        if name in (d.name for d in found):
            raise InputError(f"Direction {name!r} is listed twice.")
        found.append(Direction(name, azimuth))
    if not found:
        raise InputError("The direction list is empty; list compass points such as 's, e, n, w'.")
    return found


def action_names(text: str, count: int) -> list[str]:
    """One animation name per motion from comma-separated ``text`` (``run, walk``)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) != count:
        raise InputError(
            f"{count} motion(s) are connected but {len(names)} action name(s) given ({text!r}); "
            "give one comma-separated name per motion, e.g. 'run, walk'."
        )
    for name in names:
        if not _NAME.match(name):
            raise InputError(f"Action name {name!r}: use letters, digits, _ or - (it becomes the animation name).")
    if len(set(names)) != len(names):
        raise InputError(f"Action names must differ: {', '.join(names)}.")
    return names


def direction_set(
    motions: list[tuple[str, Pose3D]], settings: CameraSettings, directions: list[Direction]
) -> list[DirectionClip]:
    """Every (action, direction) clip, action by action in the given direction order, framed at one scale.

    ``settings`` gives projection, canvas, margin, root follow and elevation (``top`` looks straight
    down); its azimuth is replaced by each direction's.
    """
    _, elevation = view_angles(settings.preset, settings.azimuth, settings.elevation)
    clips = [
        DirectionClip(
            f"{action}_{d.name}",
            action,
            d,
            pose,
            replace(settings, preset=ORBIT, azimuth=d.azimuth, elevation=elevation, fit_extent=None),
        )
        for action, pose in motions
        for d in directions
    ]
    extents = [plane_extent(clip.camera.fit(clip.pose), clip.pose) for clip in clips]
    shared = (max(w for w, _ in extents), max(h for _, h in extents))
    for clip in clips:
        clip.camera = replace(clip.camera, fit_extent=shared)
    return clips
