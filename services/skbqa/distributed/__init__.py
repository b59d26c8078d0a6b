"""The distributed form: the pipeline's stages as services that pass `skbqa.v1.StageMessage`s over a bus."""
