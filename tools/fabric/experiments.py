"""The experiments on a running Fabric (docs/fabric.md): capacity proportionality from the
installed kernel weights, and the ripple scenarios with their per-router churn, convergence
time and goal checks. Waits poll the state until it is converged (with a timeout); the only
sleeps are the scenario's own stimulus timing (a flap's down and up phases) and the sampling
interval of the share error over time after the domain or a router comes up."""
import time

from lab import wait_until
from topology import format_rate


# -- capacity proportionality ------------------------------------------------------------------

def ideal_next_hop_shares(fab):
    """Per router and destination building: the share each next hop should get from the
    real capacities now. At a BAG router A toward building d: B(S) = cap(A-S) for each spine
    S of d (the spine's way into its building is not modelled). At a spine S1: B(A) =
    min(cap(S1-A), D(A)), D(A) = the sum of A's B toward d: the bottleneck of everything
    behind that next hop. Shares are B / sum B."""
    topo = fab.topo
    out = {}
    alive = set(fab.alive())

    def bag_weights(a, d):
        return {s.name: fab.link_capacity(s.name, a) for s in topo.spines(d)
                if any(ln.bag == a for ln in s.links) and s.name in alive and fab.link_capacity(s.name, a) > 0}

    for r in topo.routers.values():
        if r.name not in alive:
            continue
        for d in range(1, topo.buildings + 1):
            if r.role == "spine":
                if d == r.building:
                    continue
                b = {}
                for ln in r.links:
                    if ln.bag in alive and fab.link_capacity(r.name, ln.bag) > 0:
                        dn = sum(bag_weights(ln.bag, d).values())
                        if dn > 0:
                            b[ln.bag] = min(fab.link_capacity(r.name, ln.bag), dn)
            else:
                b = bag_weights(r.name, d)
            total = sum(b.values())
            if total > 0:
                out[(r.name, d)] = {k: v / total for k, v in b.items()}
    return out


def measured_next_hop_shares(fab, weights=None):
    """The same from the kernel: per (router, building), for each of the building's prefixes,
    the weight share of each next hop (by router name) in the installed group."""
    topo = fab.topo
    owner = topo.address_owner()
    weights = weights or fab.kernel_weights()
    out = {}
    for r, routes in weights.items():
        for d in range(1, topo.buildings + 1):
            for p in topo.building_prefixes(d):
                w = routes.get(p)
                if not w:
                    continue
                total = sum(w.values())
                out[(r, d, p)] = {owner.get(gw, gw): v / total for gw, v in w.items()}
    return out


def path_shares(fab, weights=None):
    """Every path (source spine, BAG router, destination spine) toward each prefix of each
    other building: its end-to-end share of the source spine's traffic, measured (product of
    the kernel weight shares along it) and ideal (product of the ideal shares)."""
    topo = fab.topo
    ideal = ideal_next_hop_shares(fab)
    meas = measured_next_hop_shares(fab, weights)
    rows = []
    for s1 in topo.spines():
        if s1.name not in fab.alive():
            continue
        for d in range(1, topo.buildings + 1):
            if d == s1.building:
                continue
            i1 = ideal.get((s1.name, d), {})
            for p in topo.building_prefixes(d):
                m1 = meas.get((s1.name, d, p), {})
                bags = set(i1) | set(m1)
                for a in sorted(bags):
                    i2 = ideal.get((a, d), {})
                    m2 = meas.get((a, d, p), {})
                    for s2 in sorted(set(i2) | set(m2)):
                        rows.append({"src": s1.name, "bag": a, "dst": s2, "building": (s1.building, d), "prefix": p,
                                     "measured": m1.get(a, 0.0) * m2.get(s2, 0.0),
                                     "ideal": i1.get(a, 0.0) * i2.get(s2, 0.0)})
    return rows


def proportionality(fab, weights=None):
    """Summary per building pair: paths, the worst |measured - ideal| (of the source spine's
    traffic) and the path it is on."""
    rows = path_shares(fab, weights)
    pairs = {}
    for r in rows:
        r["error"] = abs(r["measured"] - r["ideal"])
        k = r["building"]
        if k not in pairs or r["error"] > pairs[k]["worst"]["error"]:
            pairs.setdefault(k, {"paths": 0})
            pairs[k]["worst"] = r
        pairs[k]["paths"] = pairs[k].get("paths", 0) + 1
    worst = max((r["error"] for r in rows), default=0.0)
    return {"rows": rows, "pairs": pairs, "worst": worst}


def proportionality_table(result, title):
    lines = [f"**{title}**: worst error {100 * result['worst']:.2f} % of a source spine's traffic "
             f"(goal ≤ 2 %: {'met' if result['worst'] <= 0.02 else 'NOT met'})", "",
             "| source → destination building | paths (per prefix) | worst path | measured share | ideal share | error |",
             "|---|---|---|---|---|---|"]
    for (sb, db), v in sorted(result["pairs"].items()):
        w = v["worst"]
        lines.append(f"| building {sb} → {db} | {v['paths']} | {w['src']} → {w['bag']} → {w['dst']} ({w['prefix']}) | "
                     f"{100 * w['measured']:.2f} % | {100 * w['ideal']:.2f} % | {100 * w['error']:.2f} % |")
    return "\n".join(lines)


# -- convergence -----------------------------------------------------------------------------------

def wait_converged(fab, since, quiet, timeout, min_change=0.0):
    """Converged: for `quiet` seconds no kernel change in any namespace and no UPDATE counter
    moving, and nothing waiting for a hold-down anywhere (fab.pending). Polls once a second;
    returns the time of the last kernel change (or `since` if there was none)."""
    deadline = since + timeout
    last_counts, last_move = None, since
    while True:
        now = time.monotonic()
        counts = {n: v["sent"] for n, v in fab.counters().items()}
        if counts != last_counts:
            last_counts, last_move = counts, now
        busy = fab.pending(min_change)
        last_kernel = max(fab.monitor.last_time(), since)
        if not busy and now - max(last_kernel, last_move) >= quiet:
            return max((e[0] for e in fab.monitor.since(since)), default=since)
        if now > deadline:
            raise AssertionError(f"not converged after {timeout:.0f}s: {busy[:4]}")
        time.sleep(1.0)  # the poll interval, not a measurement: times come from the kernel


# -- ripple ------------------------------------------------------------------------------------------

def churn(fab, before, after, events, t_action):
    """Per router: UPDATEs sent/received, kernel group, next-hop and route operations, and
    the time of its last kernel change after the action."""
    rows = {}
    for n in fab.topo.routers:
        b, a = before.get(n), after.get(n)
        evs = [e for e in events if e[1] == n]
        rows[n] = {
            "sent": (a["sent"] - b["sent"]) if a and b else 0,
            "received": (a["received"] - b["received"]) if a and b else 0,
            "per_neighbor_sent": {k: a["per_neighbor"][k][0] - b["per_neighbor"].get(k, (0, 0))[0]
                                  for k in a["per_neighbor"]} if a and b else {},
            "group_ops": sum(1 for e in evs if e[2] == "group"),
            "nexthop_ops": sum(1 for e in evs if e[2] == "nexthop"),
            # bagd's own route operations: the kernel also re-announces every route over a
            # group replaced in place, so its route notifications over-count them
            "route_ops": (a["route_updates"] - b["route_updates"]) if a and b else 0,
            "route_notifications": sum(1 for e in evs if e[2] == "route"),
            "last_change": (max(e[0] for e in evs) - t_action) if evs else None,
            "lost": n in fab.killed,
        }
    return rows


def act(fab, sc, log):
    """Runs the scenario's stimulus; returns a function that undoes it (None: not undoable)."""
    kind = sc["kind"]
    if kind == "members-down":
        ms = list(range(1, int(sc.get("members", 1)) + 1))
        for m in ms:
            fab.set_member(sc["spine"], sc["bag"], m, False)
        return lambda: [fab.set_member(sc["spine"], sc["bag"], m, True) for m in ms]
    if kind == "speed-down":
        ln = fab.topo.link(sc["spine"], sc["bag"])
        m = next(i for i, mm in enumerate(ln.members, 1) if len(mm.lanes) > 1)
        fab.set_lane(sc["spine"], sc["bag"], m, 1, False)
        log(f"  {sc['spine']}-{sc['bag']} member {m}: {format_rate(ln.members[m - 1].speed)} -> "
            f"{format_rate(ln.members[m - 1].speed - fab.topo.lane_speed)}")
        return lambda: fab.set_lane(sc["spine"], sc["bag"], m, 1, True)
    if kind == "flap":
        half = float(sc.get("period", 6.0)) / 2
        for _ in range(int(sc.get("flaps", 10))):
            fab.set_member(sc["spine"], sc["bag"], 1, False)
            time.sleep(half)  # the stimulus: the member is down for half a period ...
            fab.set_member(sc["spine"], sc["bag"], 1, True)
            time.sleep(half)  # ... and up for the other half
        return None
    if kind == "router-lost":
        fab.kill(sc["bag"])
        return None
    raise ValueError(f"scenario {sc.get('name')}: unknown kind {kind}")


def changed_routers(before, after, threshold):
    """Routers where some next hop's ideal share moved by more than `threshold` (relative)."""
    out = set()
    for key in set(before) | set(after):
        b, a = before.get(key, {}), after.get(key, {})
        for nh in set(b) | set(a):
            x, y = b.get(nh, 0.0), a.get(nh, 0.0)
            if x == 0.0 and y == 0.0:
                continue
            if abs(y - x) > threshold * max(x, 1e-12):
                out.add(key[0])
    return out


def run_scenario(fab, sc, log, quiet, timeout):
    topo = fab.topo
    damping = topo.damping if fab.damping_mode == "on" else topo.damping_off
    before = fab.counters()
    groups_before = {n: len({tuple(sorted(w.items())) for w in fab.views[n].weights().values() if len(w) > 1})
                     for n in fab.alive()}
    state_before = {n: (fab.views[n].nexthops(), fab.views[n].routes()) for n in fab.alive()}
    ideal_before = ideal_next_hop_shares(fab)
    t_action = time.monotonic()
    log(f"scenario {sc['name']} (damping {fab.damping_mode})")
    undo = act(fab, sc, log)
    t_done = time.monotonic()
    mcp = float(damping.get("min_change_percent", 5)) / 100
    last = wait_converged(fab, t_action, quiet, timeout, mcp)
    after = fab.counters()
    events = fab.monitor.since(t_action)
    rows = churn(fab, before, after, events, t_action)
    prop = proportionality(fab)
    ideal_after = ideal_next_hop_shares(fab)
    res = {"name": sc["name"], "kind": sc["kind"], "damping": fab.damping_mode, "rows": rows,
           "convergence": last - t_action if last > t_action else 0.0, "stimulus": t_done - t_action,
           "proportionality": prop, "events": events, "t_action": t_action,
           "state_before": state_before, "goals": []}
    should = changed_routers(ideal_before, ideal_after, mcp)
    touched = {n for n, r in rows.items() if r["group_ops"] + r["route_ops"] + r["nexthop_ops"] + r["route_notifications"] > 0}
    res["should_change"], res["touched"] = sorted(should), sorted(touched)
    goals = res["goals"]
    goals.append(("proportionality after convergence ≤ 2 %", prop["worst"] <= 0.02,
                  f"worst {100 * prop['worst']:.2f} %"))
    if sc["kind"] in ("members-down", "speed-down"):
        extra = sorted(touched - should)
        goals.append((f"kernel changes only where an ideal share moved > {100 * mcp:g} %", not extra,
                      f"changed: {', '.join(res['touched']) or 'none'}; should: {', '.join(res['should_change']) or 'none'}"
                      + (f"; extra: {', '.join(extra)}" if extra else "")))
        per_link = max((v for r in rows.values() for v in r["per_neighbor_sent"].values()), default=0)
        goals.append((f"≤ 1 UPDATE per affected prefix per link (≤ {topo.prefixes_per_building})",
                      per_link <= topo.prefixes_per_building, f"most on one session: {per_link}"))
    if sc["kind"] == "flap" and fab.damping_mode == "on":
        # Damping rules: per group, the first decrease at once; an increase only after a stable
        # increase_hold_down, which no 'up' phase of this flap lasts; the final recovery once.
        hold = float(damping.get("increase_hold_down", 30))
        half = float(sc.get("period", 6.0)) / 2
        long_ups = int(sc.get("flaps", 10)) if half >= hold else 0
        worst = []
        for n, r in rows.items():
            allowed = (2 + long_ups) * groups_before.get(n, 0)
            if r["group_ops"] > allowed:
                worst.append(f"{n}: {r['group_ops']} > {allowed}")
        res["allowed_per_group"] = 2 + long_ups
        goals.append((f"group operations within the damping rules ({2 + long_ups} per group)", not worst,
                      "; ".join(worst) or "every router within"))
    res["undo"] = undo
    return res


def restore(fab, res, quiet, timeout, baseline, min_change=0.0):
    """Undoes a scenario and waits until every kernel holds its baseline weights again."""
    if res["undo"] is None:
        return None
    t0 = time.monotonic()
    res["undo"]()
    wait_converged(fab, t0, quiet, timeout, min_change)

    def back():
        w = fab.kernel_weights()
        return all(w.get(n) == baseline.get(n) for n in fab.alive())
    wait_until(back, timeout, "every kernel back to its baseline weights", interval=0.5)
    return time.monotonic() - t0


def churn_table(res):
    rows = res["rows"]
    lines = ["| router | UPDATEs sent | UPDATEs received | kernel group ops | kernel next-hop ops | route ops | "
             "kernel route notifications | last kernel change (s) |",
             "|---|---|---|---|---|---|---|---|"]
    tot = {"sent": 0, "received": 0, "group_ops": 0, "nexthop_ops": 0, "route_ops": 0, "route_notifications": 0}
    for n, r in rows.items():
        if r["lost"]:
            lines.append(f"| {n} | (lost) | | | | | | |")
            continue
        for k in tot:
            tot[k] += r[k]
        lc = f"{r['last_change']:.2f}" if r["last_change"] is not None else "-"
        lines.append(f"| {n} | {r['sent']} | {r['received']} | {r['group_ops']} | {r['nexthop_ops']} | {r['route_ops']} | "
                     f"{r['route_notifications']} | {lc} |")
    lines.append(f"| **domain** | **{tot['sent']}** | **{tot['received']}** | **{tot['group_ops']}** | "
                 f"**{tot['nexthop_ops']}** | **{tot['route_ops']}** | **{tot['route_notifications']}** | "
                 f"**{res['convergence']:.2f}** |")
    res["totals"] = tot
    return "\n".join(lines)


def goals_table(res):
    lines = ["| goal | result | detail |", "|---|---|---|"]
    for g, ok, detail in res["goals"]:
        lines.append(f"| {g} | {'met' if ok else 'NOT met'} | {detail} |")
    return "\n".join(lines)


# -- coming up (issue 40 part 4) ----------------------------------------------------------------------

def error_series(fab, t0, duration, interval=0.25):
    """The domain's worst share error (as `proportionality`), sampled every `interval` seconds
    from now until `duration` seconds after `t0`: [(seconds after t0, worst error, worst path
    row, members waiting for an increase hold-down)]. The held members are counted from
    bagctl only at the samples that are a whole second apart (it costs a call per router)."""
    out = []
    next_count = 0.0
    while True:
        now = time.monotonic()
        prop = proportionality(fab)
        worst = max(prop["rows"], key=lambda r: r["error"], default=None)
        held = None
        if now - t0 >= next_count:
            held = sum(1 for b in fab.pending() if "pending-increase" in b)
            next_count = float(int(now - t0) + 1)
        out.append((now - t0, prop["worst"], worst, held))
        if now - t0 >= duration:
            return out
        time.sleep(max(0.0, interval - (time.monotonic() - now)))


def error_at(series, t):
    """The first sample at or after `t` seconds (None: the series ends before)."""
    return next((s for s in series if s[0] >= t), None)


def held_at(series, t):
    """The held-member count of the first sample at or after `t` that has one."""
    return next((s[3] for s in series if s[0] >= t and s[3] is not None), None)


def right_from(series, goal):
    """The time from which every sample is within `goal` (None: the last one is not): the
    first sample of the final run of good samples."""
    t = None
    for s in series:
        if s[1] <= goal:
            t = s[0] if t is None else t
        else:
            t = None
    return t


def comeup_table(series, marks=(0, 1, 2, 3, 5, 10, 20, 30, 40, 60)):
    """The worst share error at a few times after coming up, with the path it is on."""
    lines = ["| after up (s) | worst share error | worst path | measured | ideal | members held (increase) |",
             "|---|---|---|---|---|---|"]
    last = series[-1][0] if series else 0
    for m in marks:
        if m > last:
            break
        s = error_at(series, m)
        r = s[2]
        held = held_at(series, m)
        path = f"{r['src']} → {r['bag']} → {r['dst']} ({r['prefix']})" if r else "-"
        lines.append(f"| {s[0]:.1f} | {100 * s[1]:.2f} % | {path} | {100 * r['measured']:.2f} % | {100 * r['ideal']:.2f} % | "
                     f"{'-' if held is None else held} |" if r else f"| {s[0]:.1f} | {100 * s[1]:.2f} % | - | | | |")
    return "\n".join(lines)
