"""AnimeGamer MLLM game step: instruction -> next game state and shot representation (model, tokenizer, game state, HUD)."""
