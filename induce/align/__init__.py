"""Word alignment: IBM Model 1 and the HMM alignment model with EM, VI and CVI."""
