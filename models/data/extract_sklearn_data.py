"""Extracts the digits and diabetes datasets from a scikit-learn wheel into the
plain CSV files beside this script. Run once; the engine itself never downloads.

    pip download scikit-learn --no-deps --only-binary=:all: -d /tmp/sk
    python3 extract_sklearn_data.py /tmp/sk/scikit_learn-*.whl
"""
import csv
import gzip
import io
import sys
import zipfile

wheel = zipfile.ZipFile(sys.argv[1])
base = "sklearn/datasets/data/"

def lines(name):
    return gzip.decompress(wheel.read(base + name)).decode().splitlines()

with open("digits.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow([f"pixel_{i}" for i in range(64)] + ["label"])
    for row in csv.reader(lines("digits.csv.gz")):
        w.writerow([str(int(float(v))) for v in row])

features = [line.split() for line in lines("diabetes_data_raw.csv.gz")]
target = [line.strip() for line in lines("diabetes_target.csv.gz")]
assert len(features) == len(target) == 442
with open("diabetes.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"])
    for row, t in zip(features, target):
        w.writerow(row + [repr(float(t))])
