"""AnimeGamer shot decoder: representation -> CogVideoX-2B latents -> frames (SAT checkpoint conversion, sampler, VAE)."""
