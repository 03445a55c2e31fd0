"""DynamiCrafter-family image-to-video: godmodeanimation's Run model, DynamiCrafter 512 and ToonCrafter.

Pure library modules built on the VC2 port's pieces (diffusers ``UNet3DConditionModel`` key map, DDIM,
VAE, OpenCLIP text tower): checkpoint detection, the 8-channel UNet with image cross-attention and the
frame-stride condition, the Resampler image projection, the OpenCLIP image tower, the v-prediction
sampler and the keyframe conditioning.  ``comfy_nodes.py`` is the only ComfyUI-facing module.
"""
