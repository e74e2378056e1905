"""Pictures of the experiments (matplotlib, Debian's python3-matplotlib), PNG into an output
folder: weights over time at each router for a scenario, churn per router as bars (damping
on and off side by side), and measured vs ideal path shares."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def share_timeline(res, topo, prefix):
    """Per router: [(t, {next hop router: share})] for `prefix`, rebuilt from the kernel state
    at the scenario's start and every netlink notification after it."""
    owner = topo.address_owner()
    out = {}
    for router, (nhs0, routes0) in res["state_before"].items():
        nhs, routes = dict(nhs0), dict(routes0)

        def shares():
            info = nhs.get(routes.get(prefix), {})
            if "group" in info:
                total = sum(w for _, w in info["group"])
                return {owner.get(nhs.get(m, {}).get("gateway"), f"nh{m}"): w / total for m, w in info["group"]}
            if "gateway" in info:
                return {owner.get(info["gateway"], info["gateway"]): 1.0}
            return {}
        line = [(0.0, shares())]
        for t, r, kind, op, detail in res["events"]:
            if r != router:
                continue
            if kind in ("group", "nexthop"):
                nh_id, info = detail
                if op == "new":
                    nhs[nh_id] = info
                else:
                    nhs.pop(nh_id, None)
            elif kind == "route":
                p, nh_id = detail
                if op == "new":
                    routes[p] = nh_id
                else:
                    routes.pop(p, None)
            else:
                continue
            line.append((t - res["t_action"], shares()))
        if any(s for _, s in line):
            out[router] = line
    return out


def weights_over_time(res, topo, prefix, path):
    lines = share_timeline(res, topo, prefix)
    if not lines:
        return None
    end = max(res["convergence"], res["stimulus"]) + 2
    names = sorted(lines)
    cols = 4
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.2 * rows), sharex=True, sharey=True, squeeze=False)
    vals = [100 * v for ln in lines.values() for _, s in ln for v in s.values()]
    lo, hi = min(vals), max(vals)
    pad = max(2.0, (hi - lo) * 0.15)
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, n in zip(axes.flat, names):
        ax.set_visible(True)
        line = lines[n] + [(end, lines[n][-1][1])]
        hops = sorted({h for _, s in line for h in s})
        for h in hops:
            ax.step([t for t, _ in line], [100 * s.get(h, 0.0) for _, s in line], where="post", label=h)
        ax.set_title(n, fontsize=9)
        ax.legend(fontsize=6, loc="lower right")
        ax.grid(alpha=0.3)
        ax.set_ylim(max(0, lo - pad), min(100, hi + pad))
    for ax in axes[-1]:
        ax.set_xlabel("s after the event")
    for ax in axes[:, 0]:
        ax.set_ylabel("share %")
    return save(fig, path, f"{res['name']} (damping {res['damping']}): next-hop shares for {prefix} in each kernel")


def churn_bars(results, path):
    """results: {damping: res} of one scenario."""
    modes = [m for m in ("on", "off") if m in results]
    routers = list(next(iter(results.values()))["rows"])
    metrics = (("group_ops", "kernel group operations"), ("route_ops", "route operations (bagd to the FIB)"),
               ("sent", "UPDATEs sent"))
    fig, axes = plt.subplots(1, len(metrics), figsize=(15, 3.6))
    width = 0.8 / len(modes)
    for ax, (key, label) in zip(axes, metrics):
        for i, m in enumerate(modes):
            vals = [results[m]["rows"][n][key] for n in routers]
            ax.bar([x + i * width for x in range(len(routers))], vals, width, label=f"damping {m}")
        ax.set_xticks([x + width * (len(modes) - 1) / 2 for x in range(len(routers))])
        ax.set_xticklabels(routers, rotation=60, fontsize=7)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    return save(fig, path, f"{next(iter(results.values()))['name']}: churn per router")


def proportionality_scatter(states, path):
    """states: [(label, proportionality result)]."""
    fig, ax = plt.subplots(figsize=(5, 5))
    for label, res in states:
        ax.scatter([100 * r["ideal"] for r in res["rows"]], [100 * r["measured"] for r in res["rows"]], s=10,
                   label=f"{label} (worst {100 * res['worst']:.2f} %)", alpha=0.7)
    hi = max([100 * max(r["ideal"], r["measured"]) for _, res in states for r in res["rows"]] + [1])
    ax.plot([0, hi], [0, hi], color="grey", linewidth=0.8)
    ax.set_xlabel("ideal share of the source spine's traffic (%)")
    ax.set_ylabel("share from the kernel weights (%)")
    ax.legend(fontsize=6)
    ax.grid(alpha=0.3)
    return save(fig, path, "capacity proportionality: every path")


def save(fig, path, title):
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
