"""Helpers shared by the tests: synthetic and real material with known truth, tiny models, committed fixtures.

One module per feature and kind (``<feature>_<what>``): ``sprite_synth``/``timing_synth`` draw clips with a
known ground truth, ``sprite_real`` reads Kenney's CC0 art from the arcade wheel, ``sprite_rig`` renders the
shipped run cycle, ``pose_bvh`` writes BVH files with analytic joint positions, ``*_fixtures`` read the
committed parity fixtures and key manifests, ``trainers_tiny`` builds a tiny trainable VC2.
"""
