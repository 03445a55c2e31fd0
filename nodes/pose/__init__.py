"""Pose from rigs: BVH / Blender motion → orientation-true OpenPose maps, keypoints, depth and normals."""
