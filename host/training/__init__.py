"""The digits model and the training loop the demos share."""
