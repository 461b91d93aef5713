"""The seven compute kernels, as JavaScript sources shared by every engine.

Each source defines ``kernel(n)`` returning an integer checksum, so the engines can be checked
to agree. Only ``Math.sqrt``/``Math.floor``/``Math.imul`` are used for arithmetic (no libm
transcendentals), which keeps the checksums bit-identical across engines.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KERNELS", "Kernel", "module_source", "script_source"]


@dataclass(frozen=True, slots=True)
class Kernel:
    """A kernel: its JavaScript, its full size and a tiny size for dry runs."""

    name: str
    source: str
    size: int
    dry_size: int


FIB = """
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function kernel(n) { return fib(n); }
"""

SIEVE = """
function kernel(n) {
  const composite = new Uint8Array(n);
  let count = 0;
  for (let i = 2; i < n; i++) {
    if (composite[i]) continue;
    count++;
    for (let j = i * i; j < n; j += i) composite[j] = 1;
  }
  return count;
}
"""

SORT = """
function kernel(n) {
  let x = 20240601;
  const values = new Array(n);
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    values[i] = x;
  }
  values.sort((a, b) => a - b);
  let h = 0;
  for (let i = 0; i < n; i++) h = (h * 31 + values[i]) % 1000000007;
  return h;
}
"""

JSON_ROUNDTRIP = """
function kernel(n) {
  const items = [];
  for (let i = 0; i < n; i++) {
    items.push({
      id: i,
      name: "item-" + i,
      price: ((i * 7919) % 10007) / 100,
      tags: ["t" + (i % 7), "t" + (i % 11)],
      nested: { flag: i % 3 === 0, path: [i, i * 2, { key: "v" + i, none: null }] },
    });
  }
  const doc = { version: 3, label: "bench \\u00e9\\u4e2d", items };
  let total = 0;
  for (let round = 0; round < 4; round++) {
    const text = JSON.stringify(doc);
    const back = JSON.parse(text);
    total += text.length + back.items.length + back.items[n - 1].nested.path[1];
  }
  return total;
}
"""

REGEX = """
function kernel(n) {
  const words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"];
  const domains = ["example.com", "mail.org", "test.net"];
  let x = 7;
  const pick = (m) => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % m;
  };
  const parts = [];
  for (let i = 0; i < n; i++) {
    switch (pick(4)) {
      case 0:
        parts.push(words[pick(8)] + "." + words[pick(8)] + "@" + domains[pick(3)]);
        break;
      case 1:
        parts.push((2000 + pick(25)) + "-" + String(1 + pick(12)).padStart(2, "0") + "-" +
                   String(1 + pick(28)).padStart(2, "0"));
        break;
      case 2:
        parts.push(String(pick(100000)));
        break;
      default:
        parts.push(words[pick(8)].toUpperCase() + words[pick(8)]);
    }
  }
  const text = parts.join(" ");
  const emails = text.match(/\\b[a-z]+\\.[a-z]+@[a-z]+\\.(?:com|org|net)\\b/g) || [];
  let years = 0;
  for (const m of text.matchAll(/\\b(\\d{4})-(\\d{2})-(\\d{2})\\b/g)) years += Number(m[1]);
  const swapped = text.replace(/\\b([A-Z]+)([a-z]+)\\b/g, (_, a, b) => b + "_" + a.toLowerCase());
  const numbers = text.split(/\\s+/).filter((w) => /^\\d+$/.test(w)).length;
  return (emails.length * 1000003 + years + swapped.length * 7 + numbers) % 2147483647;
}
"""

NBODY = """
function kernel(steps) {
  const PI = 3.141592653589793;
  const SOLAR_MASS = 4 * PI * PI;
  const DAYS = 365.24;
  const body = (x, y, z, vx, vy, vz, m) =>
    ({ x, y, z, vx: vx * DAYS, vy: vy * DAYS, vz: vz * DAYS, m: m * SOLAR_MASS });
  const bodies = [
    body(0, 0, 0, 0, 0, 0, 1),
    body(4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
         1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
         9.54791938424326609e-04),
    body(8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
         -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
         2.85885980666130812e-04),
    body(1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
         2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
         4.36624404335156298e-05),
    body(1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
         2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
         5.15138902046611451e-05),
  ];
  let px = 0, py = 0, pz = 0;
  for (const b of bodies) { px += b.vx * b.m; py += b.vy * b.m; pz += b.vz * b.m; }
  bodies[0].vx = -px / SOLAR_MASS;
  bodies[0].vy = -py / SOLAR_MASS;
  bodies[0].vz = -pz / SOLAR_MASS;
  const count = bodies.length;
  const dt = 0.01;
  for (let s = 0; s < steps; s++) {
    for (let i = 0; i < count; i++) {
      const a = bodies[i];
      for (let j = i + 1; j < count; j++) {
        const b = bodies[j];
        const dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
        const d2 = dx * dx + dy * dy + dz * dz;
        const mag = dt / (d2 * Math.sqrt(d2));
        a.vx -= dx * b.m * mag; a.vy -= dy * b.m * mag; a.vz -= dz * b.m * mag;
        b.vx += dx * a.m * mag; b.vy += dy * a.m * mag; b.vz += dz * a.m * mag;
      }
    }
    for (const b of bodies) { b.x += dt * b.vx; b.y += dt * b.vy; b.z += dt * b.vz; }
  }
  let e = 0;
  for (let i = 0; i < count; i++) {
    const a = bodies[i];
    e += 0.5 * a.m * (a.vx * a.vx + a.vy * a.vy + a.vz * a.vz);
    for (let j = i + 1; j < count; j++) {
      const b = bodies[j];
      const dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
      e -= a.m * b.m / Math.sqrt(dx * dx + dy * dy + dz * dz);
    }
  }
  return Math.round(e * 1e9);
}
"""

RAY = """
class Vec {
  constructor(x, y, z) { this.x = x; this.y = y; this.z = z; }
  add(o) { return new Vec(this.x + o.x, this.y + o.y, this.z + o.z); }
  sub(o) { return new Vec(this.x - o.x, this.y - o.y, this.z - o.z); }
  mul(s) { return new Vec(this.x * s, this.y * s, this.z * s); }
  times(o) { return new Vec(this.x * o.x, this.y * o.y, this.z * o.z); }
  dot(o) { return this.x * o.x + this.y * o.y + this.z * o.z; }
  unit() { return this.mul(1 / Math.sqrt(this.dot(this))); }
}

function kernel(width) {
  const height = Math.floor(width * 3 / 4);
  const spheres = [
    { c: new Vec(0, 0, 4), r: 1, color: new Vec(0.9, 0.2, 0.2), mirror: 0.3 },
    { c: new Vec(-1.8, -0.4, 5), r: 0.6, color: new Vec(0.2, 0.8, 0.3), mirror: 0.1 },
    { c: new Vec(1.7, -0.3, 3.5), r: 0.7, color: new Vec(0.3, 0.4, 0.9), mirror: 0.6 },
  ];
  const floorY = -1;
  const light = new Vec(-3, 5, -1);
  const sky = new Vec(0.5, 0.7, 1);

  function nearest(origin, dir) {
    let best = Infinity, hit = null;
    for (const s of spheres) {
      const oc = origin.sub(s.c);
      const b = oc.dot(dir);
      const disc = b * b - (oc.dot(oc) - s.r * s.r);
      if (disc < 0) continue;
      const t = -b - Math.sqrt(disc);
      if (t > 1e-6 && t < best) { best = t; hit = s; }
    }
    if (dir.y < 0) {
      const t = (floorY - origin.y) / dir.y;
      if (t > 1e-6 && t < best) { best = t; hit = "floor"; }
    }
    return hit === null ? null : { t: best, obj: hit };
  }

  function trace(origin, dir, depth) {
    const h = nearest(origin, dir);
    if (h === null) return sky.mul(1 - 0.5 * dir.y);
    const p = origin.add(dir.mul(h.t));
    let normal, base, mirror;
    if (h.obj === "floor") {
      normal = new Vec(0, 1, 0);
      const check = (Math.floor(p.x) + Math.floor(p.z)) & 1;
      base = check ? new Vec(0.9, 0.9, 0.9) : new Vec(0.2, 0.2, 0.2);
      mirror = 0.2;
    } else {
      normal = p.sub(h.obj.c).unit();
      base = h.obj.color;
      mirror = h.obj.mirror;
    }
    const toLight = light.sub(p).unit();
    let diffuse = Math.max(0, normal.dot(toLight));
    if (diffuse > 0 && nearest(p.add(normal.mul(1e-4)), toLight) !== null) diffuse *= 0.2;
    let color = base.mul(0.1 + 0.9 * diffuse);
    if (depth < 2 && mirror > 0) {
      const r = dir.sub(normal.mul(2 * dir.dot(normal)));
      color = color.mul(1 - mirror).add(trace(p.add(normal.mul(1e-4)), r, depth + 1).mul(mirror));
    }
    return color;
  }

  const eye = new Vec(0, 0.3, -1);
  let checksum = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dir = new Vec((x - width / 2) / height, (height / 2 - y) / height, 1).unit();
      const c = trace(eye, dir, 0);
      const q = (v) => Math.floor(255 * Math.min(1, Math.max(0, v)));
      checksum = (checksum * 131 + q(c.x) * 65536 + q(c.y) * 256 + q(c.z)) % 1000000007;
    }
  }
  return checksum;
}
"""

KERNELS: tuple[Kernel, ...] = (
    Kernel("fib", FIB, size=27, dry_size=10),
    Kernel("sieve", SIEVE, size=300_000, dry_size=1000),
    Kernel("sort", SORT, size=100_000, dry_size=1000),
    Kernel("json", JSON_ROUNDTRIP, size=1500, dry_size=20),
    Kernel("regex", REGEX, size=8000, dry_size=50),
    Kernel("nbody", NBODY, size=15_000, dry_size=100),
    Kernel("ray", RAY, size=64, dry_size=8),
)


def module_source(kernel: Kernel, n: int) -> str:
    """The kernel as a quickjail module whose default export is the checksum."""
    return f"{kernel.source}\nexport default kernel({n});\n"


def script_source(kernel: Kernel, n: int) -> str:
    """The kernel as a strict-mode script whose completion value is the checksum."""
    return f'(function () {{\n"use strict";\n{kernel.source}\nreturn kernel({n});\n}})()'
