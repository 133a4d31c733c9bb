"""Analyse: what a checkout holds and what each override does (index → recognise → classify → scan).

Pure in the middle: files are read through the checkout, nothing is written. ``analysis`` holds the
data the recognisers produce; ``scan`` is the stage's entry point.
"""
