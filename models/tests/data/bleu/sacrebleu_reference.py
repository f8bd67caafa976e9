"""Reference corpus BLEU values from sacreBLEU (default settings: 13a tokeniser,
exp smoothing, 4-grams) for the sentence sets in `cases.txt`; writes
`sacrebleu_reference.txt`, which models/tests/suite/text.rs compares against.

    python -m pip install sacrebleu==2.6.0
    python sacrebleu_reference.py

`cases.txt`: blocks separated by a line `===`; in each block, lines `H: ...` are
hypotheses and lines `R: ...` their references, in order.
"""
import sacrebleu

blocks = open("cases.txt", encoding="utf-8").read().split("===\n")
with open("sacrebleu_reference.txt", "w", encoding="utf-8") as out:
    out.write(f"# sacrebleu {sacrebleu.__version__}: score, precisions 1-4, bp, hyp_len, ref_len per case\n")
    for block in blocks:
        lines = [l for l in block.splitlines() if l]
        hyps = [l[3:] for l in lines if l.startswith("H: ")]
        refs = [l[3:] for l in lines if l.startswith("R: ")]
        b = sacrebleu.corpus_bleu(hyps, [refs])
        p = " ".join(repr(x) for x in b.precisions)
        out.write(f"{b.score!r} {p} {b.bp!r} {b.sys_len} {b.ref_len}\n")
