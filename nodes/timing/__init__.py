"""Animation timing for 2D: key poses, timing charts (holds, ones/twos/threes, spacing) and smear frames."""
