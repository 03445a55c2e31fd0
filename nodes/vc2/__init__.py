"""VideoCrafter2 (and godmodeanimation fine-tunes) text-to-video sprite sampling.

Pure library modules: checkpoint detection/loading, the UNet on diffusers' ``UNet3DConditionModel``
plus VC2's fps embedding, the LDM VAE and OpenCLIP text encoder from the checkpoint's own weights,
the faithful DDIM sampler with ``scale_arr`` and the sprite prompt builder.  ``comfy_nodes.py`` is the
only ComfyUI-facing module.
"""
