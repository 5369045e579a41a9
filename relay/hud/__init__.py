"""The dashboard (HUD) side of CRCR: the results body shape and the client that posts it."""
