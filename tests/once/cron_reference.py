#!/usr/bin/env python3
"""cron_reference.py - src/core's time zones and cron expressions checked
against an independent reference: Python's zoneinfo (its own TZif and
POSIX TZ code) and a brute-force cron matcher written here from the rules
of docs/internals/cron.md.

    cron_reference.py PROBE

PROBE is the cron_probe program (tests/once/cron_probe.c). Random zones,
instants and expressions from a fixed seed (SB_CRON_SEED overrides it);
every answer the probe gives must equal the reference's. Prints the first
differences and exits 1 on any.
"""
import datetime as dt
import os
import random
import subprocess
import sys
import zoneinfo

ZONEDIR = "/usr/share/zoneinfo"
ZONES = [
    "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata",
    "Australia/Adelaide", "Australia/Lord_Howe", "Pacific/Chatham",
    "Asia/Tehran", "America/Sao_Paulo", "Africa/Casablanca", "Europe/Dublin",
    "America/St_Johns", "Asia/Kathmandu", "America/Santiago", "America/Nuuk",
    "Antarctica/Troll", "America/Havana", "Australia/Sydney", "Asia/Gaza",
    "Pacific/Kiritimati", "Etc/GMT+12", "Europe/London", "Pacific/Apia",
]
EPOCH = dt.datetime(1970, 1, 1)
UTC = dt.timezone.utc
SEARCH_YEARS = 50  # SB_CRON_SEARCH_YEARS

_zones = {}


def zone(name):
    if name not in _zones:
        if name == "UTC":
            _zones[name] = dt.timezone.utc
        else:
            with open(os.path.join(ZONEDIR, name), "rb") as f:
                _zones[name] = zoneinfo.ZoneInfo.from_file(f, key=name)
    return _zones[name]


def offset(z, u):
    return int(dt.datetime.fromtimestamp(u, UTC).astimezone(z)
               .utcoffset().total_seconds())


def local(z, u):
    return u + offset(z, u)


def resolve(z, w):
    """The first instant whose wall time is w or later."""
    naive = EPOCH + dt.timedelta(seconds=w)
    if z is UTC:
        return w
    u = int(naive.replace(tzinfo=z, fold=0).timestamp())
    if local(z, u) == w:
        return u  # fold=0: the first of two, when the hour repeats
    # In a gap: bisect for the first instant whose wall time passes w.
    lo, hi = u - 4 * 3600, u
    assert local(z, lo) < w <= local(z, hi), (w, u)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if local(z, mid) >= w:
            hi = mid
        else:
            lo = mid
    return hi


# ---- cron expressions, generated with the sets they stand for ----
FIELDS = [  # lo, hi, star_hi, step_max
    (0, 59, 59, 60), (0, 23, 23, 24), (1, 31, 31, 31), (1, 12, 12, 12),
    (0, 7, 6, 7),
]
MONTHS = "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split()
WDAYS = "SUN MON TUE WED THU FRI SAT".split()


def spell(f, v, rng):
    if f == 3 and rng.random() < 0.3:
        name = MONTHS[v - 1]
    elif f == 4 and v <= 6 and rng.random() < 0.3:
        name = WDAYS[v]
    else:
        return str(v)
    return rng.choice([name, name.lower(), name.capitalize()])


def element(f, rng):
    lo, hi, star_hi, step_max = FIELDS[f]
    kind = rng.choice(["*", "*/", "a", "a", "a-b", "a-b/", "a/"])
    if kind == "*":
        return "*", set(range(lo, star_hi + 1))
    if kind == "*/":
        s = rng.randint(1, min(step_max, 15))
        return "*/%d" % s, set(range(lo, star_hi + 1, s))
    a = rng.randint(lo, hi)
    if kind == "a":
        return spell(f, a, rng), {a}
    if kind == "a/":
        s = rng.randint(1, min(step_max, 15))
        return "%s/%d" % (spell(f, a, rng), s), set(range(a, hi + 1, s))
    b = rng.randint(a, hi)
    text = "%s-%s" % (spell(f, a, rng), spell(f, b, rng))
    if kind == "a-b/":
        s = rng.randint(1, min(step_max, 15))
        return text + "/%d" % s, set(range(a, b + 1, s))
    return text, set(range(a, b + 1))


def expression(rng):
    texts, sets, stars = [], [], []
    for f in range(5):
        parts, values = [], set()
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            t, s = element(f, rng)
            parts.append(t)
            values |= s
        if f == 4:
            values = {0 if v == 7 else v for v in values}
        texts.append(",".join(parts))
        sets.append(values)
        stars.append(texts[-1].startswith("*"))
    return " ".join(texts), sets, stars[2] or stars[4]


def day_ok(sets, and_rule, date):
    dom = date.day in sets[2]
    dow = (date.weekday() + 1) % 7 in sets[4]  # Monday 0 -> Sunday 0
    return (dom and dow) if and_rule else (dom or dow)


def ever(sets, and_rule):
    if not and_rule:
        return True
    mdays = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return any(d <= mdays[m - 1] for m in sets[3] for d in sets[2])


def next_occurrence(sets, and_rule, z, after_us):
    """min resolve(w) > after over matching wall times w, without
    assuming resolve is monotonic over more than 3 hours."""
    t = after_us // 10**6
    w0 = local(z, t)
    start = (w0 - 3 * 3600) // 86400
    stop = (dt.datetime(1970, 1, 1) + dt.timedelta(days=start)).year
    limit = (dt.datetime(min(stop + SEARCH_YEARS, 9999), 1, 1)
             - EPOCH).days
    best = None
    hours, minutes = sorted(sets[1]), sorted(sets[0])
    day = start
    while day < limit:
        date = EPOCH + dt.timedelta(days=day)
        if date.month in sets[3] and day_ok(sets, and_rule, date):
            for h in hours:
                for m in minutes:
                    w = day * 86400 + h * 3600 + m * 60
                    if best is not None and w > best[1] + 3 * 3600:
                        return best[0] * 10**6
                    if w < w0 - 3 * 3600:
                        continue
                    u = resolve(z, w)
                    if u > t and (best is None or u < best[0]):
                        best = (u, w)
        day += 1
    return None if best is None else best[0] * 10**6


def transitions(z, lo, hi):
    """Instants (s) in [lo, hi) where z's offset changes, to the second."""
    out = []
    step = 6 * 3600
    u, prev = lo, offset(z, lo)
    while u < hi:
        v = u + step
        o = offset(z, v)
        if o != prev:
            a, b = u, v
            while b - a > 1:
                mid = (a + b) // 2
                if offset(z, mid) == prev:
                    a = mid
                else:
                    b = mid
            out.append(b)
        u, prev = v, o
    return out


def ts(y, m=1, d=1):
    return int((dt.datetime(y, m, d) - EPOCH).total_seconds())


def main():
    probe = sys.argv[1]
    seed = int(os.environ.get("SB_CRON_SEED", "20260329"))
    rng = random.Random(seed)
    questions, expected = [], []

    # Instants near each zone's changes (2024-2027, and 2045-2047, past
    # the last transition of the files: the footer rule), and anywhere.
    near = {}
    for name in ZONES:
        z = zone(name)
        near[name] = (transitions(z, ts(2024), ts(2028)) +
                      transitions(z, ts(2045), ts(2048)))

    def instant(name):
        if near[name] and rng.random() < 0.6:
            return rng.choice(near[name]) + rng.randint(-3 * 86400, 3 * 86400)
        return rng.randint(ts(1975), ts(2100))

    # Offsets at random instants, and around every change found.
    for _ in range(1500):
        name = rng.choice(ZONES)
        u = instant(name)
        questions.append("off\t%s\t%d" % (name, u))
        expected.append(str(offset(zone(name), u)))
    for name in ZONES:
        for t in near[name]:
            for u in (t - 1, t, t + 1):
                questions.append("off\t%s\t%d" % (name, u))
                expected.append(str(offset(zone(name), u)))

    # Wall times, mostly the ones that repeat or never happen.
    for _ in range(600):
        name = rng.choice(ZONES)
        z = zone(name)
        u = instant(name)
        w = local(z, u) // 60 * 60 + rng.choice([0, 0, 30, -30, 59]) * 60
        questions.append("resolve\t%s\t%d" % (name, w))
        expected.append(str(resolve(z, w)))

    # Next occurrences.
    for _ in range(500):
        name = rng.choice(ZONES)
        text, sets, and_rule = expression(rng)
        after = instant(name) * 10**6 + rng.randint(0, 10**6 - 1)
        questions.append("next\t%s\t%s\t%d" % (text, name, after))
        if not ever(sets, and_rule):
            expected.append("ERR cron: never occurs")
            continue
        n = next_occurrence(sets, and_rule, zone(name), after)
        expected.append("ERR cron: never occurs" if n is None else str(n))

    out = subprocess.run([probe], input="\n".join(questions) + "\n",
                         capture_output=True, text=True, check=True).stdout
    answers = out.splitlines()
    if len(answers) != len(questions):
        print("FAIL: %d answers to %d questions" % (len(answers),
                                                    len(questions)))
        return 1
    bad = 0
    for q, want, got in zip(questions, expected, answers):
        if want.startswith("ERR"):
            ok = got.startswith(want)
        else:
            ok = got == want
        if not ok:
            bad += 1
            if bad <= 20:
                print("FAIL: %s\n  want %s\n  got  %s" % (
                    q.replace("\t", " | "), want, got))
    counts = {}
    for q in questions:
        counts[q.split("\t")[0]] = counts.get(q.split("\t")[0], 0) + 1
    print("cron_reference: seed %d, %s, %d zones: %d differences" % (
        seed, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())),
        len(ZONES), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
