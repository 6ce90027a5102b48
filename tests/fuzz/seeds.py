#!/usr/bin/env python3
"""Seed corpora for the libFuzzer targets of tests/fuzz: small valid inputs
of every format (and gzip variants) written to OUT/<target>/. Usage:
seeds.py OUT TOP_SRCDIR [JPEG_HELPER] (the helper, built by `make fuzz` from
jpeg_seed.c, writes baseline JPEGs; without it the image corpus is PNG only)."""
import gzip, json, os, re, struct, subprocess, sys, zlib

out, top = sys.argv[1], sys.argv[2]
jpeg_helper = sys.argv[3] if len(sys.argv) > 3 else None


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# schema: the op list's schemas, and a few hand-written corner cases
text = open(os.path.join(top, 'abi/wick/op_list.h')).read()
schemas = re.findall(r'X\("([^"]*\) -> [^"]*)"', text)
schemas += ['f(Tensor? x=None, int[2] k=1, float[] w=[], str s="a", *, bool b=True) -> (Tensor a, Tensor b)',
            'g(Tensor(a!) self, Tensor[] xs, ScalarType? dtype=None, Device? d=None) -> Tensor(a!)',
            'h.overload(int x=-3, float y=1e-5, Scalar z=inf) -> Tensor[]']
for i, s in enumerate(schemas[:400]):
    put('schema', 'op%03d' % i, s.encode())

# safetensors
DT = {'F32': ('<f', 4), 'F64': ('<d', 8), 'I64': ('<q', 8), 'U8': ('<B', 1), 'BOOL': ('<B', 1),
      'I32': ('<i', 4), 'F16': ('<e', 2), 'BF16': ('<H', 2), 'I8': ('<b', 1), 'I16': ('<h', 2)}


def safetensors(tensors, meta=None):
    header, blob = {}, b''
    for name, (dt, shape, vals) in tensors.items():
        fmt, size = DT[dt]
        data = b''.join(struct.pack(fmt, v) for v in vals)
        header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [len(blob), len(blob) + len(data)]}
        blob += data
    if meta is not None:
        header['__metadata__'] = meta
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    return struct.pack('<Q', len(h)) + h + blob


put('safetensors', 'empty', safetensors({}))
put('safetensors', 'one_f32', safetensors({'w': ('F32', [2, 2], [1.0, 2.0, 3.0, 4.0])}))
put('safetensors', 'dtypes', safetensors({k: (k, [3], [0, 1, 1]) for k in DT}))
put('safetensors', 'meta', safetensors({'a.weight': ('F64', [1], [0.5]), 'a.bias': ('I64', [0], [])},
                                       {'format': 'pt', 'epoch': '3'}))
put('safetensors', 'scalar', safetensors({'s': ('F32', [], [7.0])}))
put('safetensors', 'checkpoint', safetensors(
    {'model.fc.weight': ('F32', [1, 2], [1.0, 2.0]), 'optimizer.state.0.momentum_buffer': ('F32', [1, 2], [0.0, 0.0])},
    {'wick.checkpoint': '1', 'wick.parts': 'model,optimizer', 'epoch': '1'}))


# IDX (MNIST): first byte: share of the input that is the images file
def idx(images, n, h=2, w=2):
    if images:
        return struct.pack('>IIII', 0x803, n, h, w) + bytes((i * 37) % 256 for i in range(n * h * w))
    return struct.pack('>II', 0x801, n) + bytes(i % 10 for i in range(n))


for n in (1, 3):
    im, lab = idx(True, n), idx(False, n)
    for tag, a, b in (('plain', im, lab), ('gz', gzip.compress(im), gzip.compress(lab)),
                      ('gzimg', gzip.compress(im), lab)):
        total = 1 + len(a) + len(b)
        share = max(0, min(255, round((len(a) + 1) * 255 / (total - 1)) if total > 1 else 0))
        # the target cuts at 1 + share * (total - 1) / 255: pick the share that lands on len(a)
        for s in range(256):
            if 1 + s * (total - 1) // 255 == 1 + len(a):
                share = s
                break
        put('idx', 'mnist_%s_%d' % (tag, n), bytes([share]) + a + b)


# CIFAR: first byte: even = 10 classes, odd = 100
def cifar(n, classes):
    recs = b''
    for i in range(n):
        lab = bytes([i % 10]) if classes == 10 else bytes([i % 20, i % 100])
        recs += lab + bytes((i + k) % 256 for k in range(3072))
    return recs


for classes in (10, 100):
    raw = cifar(2, classes)
    put('cifar', 'c%d_plain' % classes, bytes([0 if classes == 10 else 1]) + raw)
    put('cifar', 'c%d_gz' % classes, bytes([0 if classes == 10 else 1]) + gzip.compress(raw))


# PNG: gray, gray+alpha, RGB, RGBA, palette (with tRNS), 16-bit, interlaced
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)


def png(w, h, ctype, depth=8, plte=None, trns=None, interlace=0):
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    bpp = ch * depth
    rowbytes = (w * bpp + 7) // 8
    if interlace:  # Adam7: pass rows concatenated; a 1x1 image has only pass 1
        raw = b'\x00' + bytes(range(rowbytes))
    else:
        raw = b''.join(bytes([r % 5]) + bytes((r * 7 + k) % 256 for k in range(rowbytes)) for r in range(h))
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, interlace))
    if plte:
        out += chunk(b'PLTE', plte)
    if trns:
        out += chunk(b'tRNS', trns)
    return out + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')


for sel in range(4):
    put('image', 'gray_%d.png' % sel, bytes([sel]) + png(3, 2, 0))
put('image', 'graya.png', b'\x00' + png(2, 2, 4))
put('image', 'rgb.png', b'\x02' + png(4, 3, 2))
put('image', 'rgba.png', b'\x03' + png(2, 3, 6))
put('image', 'palette.png', b'\x02' + png(4, 2, 3, 4, plte=bytes(range(48)), trns=b'\x00\x80'))
put('image', 'rgb16.png', b'\x00' + png(2, 2, 2, 16))
put('image', 'gray1.png', b'\x01' + png(9, 2, 0, 1))
put('image', 'interlaced.png', b'\x02' + png(1, 1, 2, 8, interlace=1))
if jpeg_helper:
    for w, h, gray, q in ((8, 8, 0, 90), (17, 9, 0, 50), (16, 16, 1, 75)):
        data = subprocess.run([jpeg_helper, str(w), str(h), str(gray), str(q)], check=True, capture_output=True).stdout
        put('image', 'j%dx%d_%d.jpg' % (w, h, gray), bytes([gray * 2]) + data)
print('seeds: ' + ', '.join('%s %d' % (t, len(os.listdir(os.path.join(out, t)))) for t in sorted(os.listdir(out))))
