#!/usr/bin/env python3
"""`make fabric`: a BAG domain in a box (issue 17, docs/fabric.md).

  fabric.py up              build the domain, print it, wait for Ctrl-C (then tear it down)
  fabric.py proportionality end-to-end path shares from the kernel weights vs the capacity
  fabric.py ripple          the ripple scenarios, damping on and/or off
  fabric.py all             both, with damping on and off: what `make fabric` runs
  fabric.py short           one scenario with its goals asserted (ctest interop.fabric_short)
  fabric.py comeup          the share error over time after the domain comes up, and after
                            one router restarts (issue 40 part 4; tools/fabric/comeup.toml)

Common options: --topology FILE (default tools/fabric/default.toml), --out DIR (tables and
pictures; default build/fabric), --build DIR (bagd and bagctl; default $BAGD_BUILD or
build). Needs root (network namespaces). Everything is torn down at the end, on Ctrl-C and
on errors."""
import argparse
import datetime
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import experiments as ex  # noqa: E402
from lab import ROOT, Fabric  # noqa: E402
from topology import Topology, format_rate  # noqa: E402


class Report:
    def __init__(self, out):
        self.out = out
        self.parts = []

    def __call__(self, text=""):
        print(text, flush=True)
        self.parts.append(text)

    def save(self, name="report.md"):
        path = os.path.join(self.out, name)
        with open(path, "w") as f:
            f.write("\n".join(self.parts) + "\n")
        return path


def describe(topo, fab, took, say):
    say(f"## Topology `{topo.name}` ({os.path.relpath(topo.path, ROOT) if os.path.isabs(topo.path) else topo.path})")
    say()
    say(f"{len(topo.routers)} bagd routers: {topo.buildings} buildings x {topo.spines_per_building} spines, "
        f"{topo.planes} BAG planes x {topo.bag_per_plane} BAG routers; {len(topo.links)} LAGs, "
        f"{sum(len(ln.lanes('spine')) for ln in topo.links)} member lanes of {format_rate(topo.lane_speed)}; "
        f"{topo.prefixes_per_building} prefixes per building. Up (every session Established, every prefix in "
        f"every kernel) in {took:.1f} s; the bagd processes use {fab.rss_mib():.0f} MiB in all. Local capacity (issue 17 part 1) "
        f"{'configured on every neighbor' if fab.local_capacity else 'not supported by this bagd: not configured'}.")
    say()


def settle_args(topo, mode):
    d = topo.damping if mode == "on" else topo.damping_off
    readv = float(d.get("readvertise_interval", topo.damping.get("readvertise_interval", 5)))
    quiet = max(2.0, readv + 1.0)
    timeout = float(topo.damping.get("max_hold_down", 30)) + 90
    return quiet, timeout


def run_mode(topo, mode, args, say, scenarios, plots):
    """One fabric with damping `mode`: baseline proportionality, then each scenario."""
    results = {}
    with Fabric(topo, damping=mode, build=args.build, log=say) as fab:
        took = fab.up()
        if mode == "on" or not scenarios:
            describe(topo, fab, took, say)
        quiet, timeout = settle_args(topo, mode)
        ex.wait_converged(fab, time.monotonic(), quiet, timeout)
        baseline = fab.kernel_weights()
        base = ex.proportionality(fab, baseline)
        results["baseline"] = base
        results["up_seconds"] = took
        say(f"### Capacity proportionality, converged default topology (damping {mode})")
        say()
        say(ex.proportionality_table(base, "baseline"))
        say()
        states = [("baseline", base)]
        for sc in scenarios:
            res = ex.run_scenario(fab, sc, lambda m: print(m, flush=True), quiet, timeout)
            say(f"### Scenario `{sc['name']}`, damping {mode}")
            say()
            say(f"Stimulus {res['stimulus']:.1f} s; convergence (the event to the last kernel change in the domain): "
                f"**{res['convergence']:.2f} s**.")
            say()
            say(ex.churn_table(res))
            say()
            say(ex.proportionality_table(res["proportionality"], f"proportionality after {sc['name']}"))
            say()
            say(ex.goals_table(res))
            say()
            states.append((sc["name"], res["proportionality"]))
            if plots:
                d = 2 if sc.get("spine", "b2").startswith("b2") or "spine" not in sc else 1
                prefix = topo.building_prefixes(d)[0]
                p = plots.weights_over_time(res, topo, prefix, os.path.join(args.out, f"weights-{sc['name']}-{mode}.png"))
                if p:
                    say(f"![weights over time]({os.path.basename(p)})")
                    say()
            rec = ex.restore(fab, res, quiet, timeout, baseline)
            if rec is not None:
                say(f"Restored: every kernel back to its baseline weights {rec:.1f} s after the undo.")
                say()
            res.pop("undo", None)
            results[sc["name"]] = res
        if plots:
            p = plots.proportionality_scatter(states, os.path.join(args.out, f"proportionality-{mode}.png"))
            say(f"![proportionality]({os.path.basename(p)})")
            say()
    left = fab.leftovers()
    if left:
        raise AssertionError(f"namespaces left behind: {left}")
    return results


def load_plots():
    try:
        import plots
        return plots
    except ImportError as e:
        print(f"no pictures ({e}): install python3-matplotlib (make deps)", file=sys.stderr)
        return None


def header(say, args, topo):
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h %s"], capture_output=True, text=True).stdout.strip()
    say(f"# bagd fabric: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit[:80]}")
    say()
    say(f"Damping as configured: {topo.damping}; off: {topo.damping_off}.")
    say()


def cmd_up(args, topo):
    with Fabric(topo, damping=args.damping, build=args.build) as fab:
        took = fab.up()
        describe(topo, fab, took, print)
        for n in topo.routers:
            print(f"  {n:6} ip netns exec {fab.ns[n]} ip nexthop   {fab.bagctl} --socket {fab.sock(n)} show nexthop-groups")
        print("Ctrl-C tears it down.")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


def cmd_proportionality(args, topo):
    say = Report(args.out)
    header(say, args, topo)
    run_mode(topo, args.damping, args, say, [], load_plots())
    say.save("proportionality.md")
    return 0


def pick(topo, names):
    if not names:
        return topo.scenarios
    by = {s["name"]: s for s in topo.scenarios}
    missing = [n for n in names if n not in by]
    if missing:
        raise SystemExit(f"unknown scenario(s) {missing}: the topology has {sorted(by)}")
    return [by[n] for n in names]


def cmd_ripple(args, topo, modes=None):
    say = Report(args.out)
    header(say, args, topo)
    plots = load_plots()
    scenarios = pick(topo, args.scenario)
    modes = modes or (["on", "off"] if args.damping == "both" else [args.damping])
    t0 = time.monotonic()
    by_mode = {m: run_mode(topo, m, args, say, scenarios, plots) for m in modes}
    say("## Summary")
    say()
    say("| scenario | damping | UPDATEs sent | group ops | route ops | convergence (s) | worst proportionality error | goals |")
    say("|---|---|---|---|---|---|---|---|")
    failed = []
    for sc in scenarios:
        for m in modes:
            r = by_mode[m][sc["name"]]
            t = r["totals"]
            bad = [g for g, ok, _ in r["goals"] if not ok]
            failed += [f"{sc['name']}/{m}: {g}" for g in bad]
            say(f"| {sc['name']} | {m} | {t['sent']} | {t['group_ops']} | {t['route_ops']} | {r['convergence']:.2f} | "
                f"{100 * r['proportionality']['worst']:.2f} % | {'all met' if not bad else 'NOT met: ' + '; '.join(bad)} |")
    say()
    flaps = [s for s in scenarios if s["kind"] == "flap"]
    if flaps and set(modes) == {"on", "off"}:
        for sc in flaps:
            on, off = by_mode["on"][sc["name"]]["totals"]["group_ops"], by_mode["off"][sc["name"]]["totals"]["group_ops"]
            ratio = off / on if on else float("inf")
            ok = ratio >= 10
            if not ok:
                failed.append(f"{sc['name']}: damping off/on group ops {ratio:.1f} < 10")
            say(f"Flap `{sc['name']}`: {off} kernel group operations with damping off, {on} with damping on: "
                f"**{ratio:.1f}x** (goal ≥ 10x: {'met' if ok else 'NOT met'}).")
            say()
    if plots and set(modes) == {"on", "off"}:
        for sc in scenarios:
            p = plots.churn_bars({m: by_mode[m][sc["name"]] for m in modes},
                                 os.path.join(args.out, f"churn-{sc['name']}.png"))
            say(f"![churn {sc['name']}]({os.path.basename(p)})")
            say()
    say(f"Total run time {time.monotonic() - t0:.0f} s.")
    path = say.save("report.md")
    print(f"\nreport: {path}; pictures in {args.out}")
    if failed:
        print("goals not met:\n  " + "\n  ".join(failed))
    return 1 if (failed and args.strict) else 0


def cmd_short(args, topo):
    """One scenario (member-down, damping on), asserting what this bagd can meet."""
    say = Report(args.out)
    plots = load_plots()
    sc = pick(topo, args.scenario or ["member-down"])[0]
    failures = []
    with Fabric(topo, damping="on", build=args.build, log=say) as fab:
        took = fab.up()
        describe(topo, fab, took, say)
        if took > 60:
            failures.append(f"up in {took:.0f} s, goal < 60 s")
        quiet, timeout = settle_args(topo, "on")
        ex.wait_converged(fab, time.monotonic(), quiet, timeout)
        baseline = fab.kernel_weights()
        base = ex.proportionality(fab, baseline)
        say(ex.proportionality_table(base, "baseline"))
        if base["worst"] > 0.02:
            failures.append(f"baseline proportionality {100 * base['worst']:.2f} % > 2 %")
        ideal0 = ex.ideal_next_hop_shares(fab)
        res = ex.run_scenario(fab, sc, say, quiet, timeout)
        say(ex.churn_table(res))
        say(ex.goals_table(res))
        if plots:
            plots.weights_over_time(res, topo, topo.building_prefixes(2)[0], os.path.join(args.out, "short-weights.png"))
        # What holds with or without the local capacity rule: the member loss reached the
        # kernel of the BAG router at the LAG's other end at once (a decrease is not held), no
        # session carried more than one UPDATE per prefix, and the spine's share at that BAG
        # router went down.
        meas = ex.measured_next_hop_shares(fab)
        p = topo.building_prefixes(topo.routers[sc["spine"]].building)[0]
        before = ex.measured_next_hop_shares(fab, baseline).get((sc["bag"], topo.routers[sc["spine"]].building, p), {})
        now = meas.get((sc["bag"], topo.routers[sc["spine"]].building, p), {})
        if not now.get(sc["spine"], 1) < before.get(sc["spine"], 0):
            failures.append(f"{sc['bag']}: the share of {sc['spine']} for {p} did not go down: {before} -> {now}")
        r = res["rows"][sc["bag"]]
        if r["last_change"] is None or r["last_change"] > 5:
            failures.append(f"{sc['bag']}: no kernel change within 5 s of the member loss ({r['last_change']})")
        for g, ok, detail in res["goals"]:
            needs_local = g.startswith("proportionality") or g.startswith("kernel changes only")
            if not ok and needs_local and not fab.local_capacity:
                say(f"SKIP goal '{g}': needs the local capacity rule (issue 17 part 1), which this bagd lacks ({detail})")
            elif not ok:
                failures.append(f"{g}: {detail}")
        rec = ex.restore(fab, res, quiet, timeout, baseline)
        say(f"restored to the baseline weights in {rec:.1f} s")
        if ex.ideal_next_hop_shares(fab) != ideal0:
            failures.append("the ideal shares after the undo differ from the baseline")
    left = fab.leftovers()
    if left:
        failures.append(f"namespaces left behind: {left}")
    say.save("short.md")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("fabric_short: every goal this bagd can meet is met")
    return 0


def cmd_comeup(args, topo):
    """The worst share error N s after the domain is up, then after one router restarts."""
    say = Report(args.out)
    header(say, args, topo)
    mode = args.damping or "on"
    d = topo.damping if mode == "on" else topo.damping_off
    watch = args.watch or float(d.get("increase_hold_down", 30)) + 10
    routers = [r for r in (args.restart or [topo.bags()[0].name]) if r != "none"]
    quiet, timeout = settle_args(topo, mode)
    rows = []
    with Fabric(topo, damping=mode, build=args.build, log=say) as fab:
        took = fab.up()
        t_up = time.monotonic()
        describe(topo, fab, took, say)
        series = ex.error_series(fab, t_up, watch)
        say(f"### The domain comes up (damping {mode})")
        say()
        say(ex.comeup_table(series))
        say()
        rows.append(("domain up", took, series))
        ex.wait_converged(fab, time.monotonic(), quiet, timeout)
        for n in routers:
            took_r = fab.restart(n)
            t_back = time.monotonic()
            series = ex.error_series(fab, t_back, watch)
            say(f"### `{n}` restarts (bagd killed and started again; damping {mode})")
            say()
            say(f"Back (its sessions Established, every prefix in every kernel) {took_r:.1f} s after the kill.")
            say()
            say(ex.comeup_table(series))
            say()
            rows.append((f"{n} restarts", took_r, series))
            ex.wait_converged(fab, time.monotonic(), quiet, timeout)
    left = fab.leftovers()
    if left:
        raise AssertionError(f"namespaces left behind: {left}")
    say("## Summary")
    say()
    say(f"| event | up in (s) | worst share error {args.after:g} s after up | members held then | right (≤ 2 %) from (s after up) |")
    say("|---|---|---|---|---|")
    failed = []
    for what, took, series in rows:
        s = ex.error_at(series, args.after)
        rf = ex.right_from(series, 0.02)
        held = ex.held_at(series, args.after)
        say(f"| {what} | {took:.1f} | {100 * s[1]:.2f} % | {'-' if held is None else held} | "
            f"{'not within the watch' if rf is None else f'{rf:.1f}'} |")
        if s[1] > 0.02:
            failed.append(f"{what}: worst share error {100 * s[1]:.2f} % {args.after:g} s after up (goal ≤ 2 %)")
    say()
    path = say.save("comeup.md")
    print(f"\nreport: {path}")
    if failed:
        print("goals not met:\n  " + "\n  ".join(failed))
    return 1 if (failed and args.strict) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["up", "proportionality", "ripple", "all", "short", "comeup"])
    ap.add_argument("--topology", default=os.path.join(HERE, "default.toml"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--build", default=None)
    ap.add_argument("--damping", default=None, help="on, off (ripple: also both; default both)")
    ap.add_argument("--scenario", action="append", help="a scenario name (repeatable; default all)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a goal is not met")
    ap.add_argument("--after", type=float, default=2.0, help="comeup: when the share error is judged, s after up")
    ap.add_argument("--watch", type=float, default=None,
                    help="comeup: how long the share error is sampled after up (default increase_hold_down + 10 s)")
    ap.add_argument("--restart", action="append", help="comeup: a router that restarts, one after the other "
                    "(repeatable; default the first BAG router; none: no restart)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("fabric needs root (network namespaces); skipped")
        return 77
    topo = Topology.load(args.topology)
    build = args.build or os.environ.get("BAGD_BUILD", os.path.join(ROOT, "build"))
    args.out = args.out or os.path.join(build if os.path.isabs(build) else os.path.join(ROOT, build), "fabric")
    os.makedirs(args.out, exist_ok=True)
    if args.command == "up":
        args.damping = args.damping or "on"
        return cmd_up(args, topo)
    if args.command == "proportionality":
        args.damping = args.damping or "on"
        return cmd_proportionality(args, topo)
    if args.command == "short":
        return cmd_short(args, topo)
    if args.command == "comeup":
        return cmd_comeup(args, topo)
    args.damping = args.damping or "both"
    return cmd_ripple(args, topo, ["on", "off"] if args.command == "all" else None)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: torn down")
        sys.exit(130)
