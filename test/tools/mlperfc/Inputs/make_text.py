"""Writes a small deterministic English-like text file. Usage: make_text.py OUT"""
import sys

words = "the quick brown fox jumps over a lazy dog while seven wizards quietly hex".split()
lines = [" ".join(words[(i * 3 + j) % len(words)] for j in range(8)) for i in range(40)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
