"""Contents assembly: what a model request for one agent holds (reference §8, §9)."""
