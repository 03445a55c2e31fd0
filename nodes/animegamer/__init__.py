"""AnimeGamer: the MLLM game-state step and the CogVideoX-2B shot decoder."""
