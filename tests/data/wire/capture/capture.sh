#!/usr/bin/env bash
# Capture real BGP messages sent by FRR (bgpd) and GoBGP (gobgpd) as test vectors
# for bagd (tests/data/wire/*.hex).
#
# Usage (as root):  tests/data/wire/capture/capture.sh [SCENARIO...]
#   SCENARIO: a b c d e f g (default: all, see the scenario_* functions)
#   OUT_DIR=dir     where the .hex files go (default: tests/data/wire)
#   KEEP_WORK=1     keep the temp dir with configs and daemon logs
#
# Each scenario gets two fresh network namespaces joined by one veth pair:
#   bagdwire<PID>-<s>-p  peer daemon      veth0 10.0.0.1/30 fd00::1/64 fe80::ff:fe00:1
#   bagdwire<PID>-<s>-r  bgp_recorder.py  veth0 10.0.0.2/30 fd00::2/64 fe80::ff:fe00:2
# (<PID> is this shell's $$).  All BGP traffic stays on that veth pair.  Every
# daemon gets its own config, pid, vty/API socket and log files in a temp dir
# and is stopped by its PID; the EXIT trap stops everything this script started
# and deletes its namespaces, also when a step fails or on Ctrl-C.
# At the end the produced files are decoded by check_vectors.py.
#
# Needs: frr 8.4 (bgpd, zebra, vtysh), gobgpd 3.10 (gobgpd, gobgp), iproute2,
# util-linux (unshare), python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT_DIR=${OUT_DIR:-$(cd "$HERE/.." && pwd)}
RECORDER="$HERE/bgp_recorder.py"
CHECKER="$HERE/check_vectors.py"
BGPD=/usr/lib/frr/bgpd
ZEBRA=/usr/lib/frr/zebra
TAG="bagdwire$$"
WORK=$(mktemp -d "/tmp/bagd-wire-capture.$$.XXXXXX")
chmod 755 "$WORK"

PIDS=()        # background processes of the current scenario (daemons, recorder)
NAMESPACES=()  # namespaces created and not yet deleted

log() { printf '[capture %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

stop_pid() {  # stop one child we started: TERM, wait up to 5 s, then KILL
    local pid=$1 i
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    # FRR keeps a per-process dir here and removes it on a clean exit only
    rm -rf "/var/tmp/frr/bgpd.$pid" "/var/tmp/frr/zebra.$pid"
}

stop_all() {
    local pid ns p
    for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
    PIDS=()
    for ns in "${NAMESPACES[@]}"; do
        # whatever still runs inside our own namespaces was started by us
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    NAMESPACES=()
}

cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM HUP
    stop_all
    if [[ ${KEEP_WORK:-0} == 1 ]]; then log "work dir kept: $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[[ $(id -u) == 0 ]] || die "run as root"
for t in "$BGPD" "$ZEBRA" vtysh gobgpd gobgp ip unshare python3; do
    command -v "$t" >/dev/null || die "missing $t (apt-get install frr gobgpd iproute2 python3)"
done

FRR_VERSION="frr $(dpkg-query -W -f='${Version}' frr)"
GOBGP_VERSION="gobgpd $(dpkg-query -W -f='${Version}' gobgpd)"
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
TOPOLOGY="two network namespaces joined by one veth pair; peer veth0 10.0.0.1/30 fd00::1/64 fe80::ff:fe00:1 (MAC 02:00:00:00:00:01), recorder veth0 10.0.0.2/30 fd00::2/64 fe80::ff:fe00:2"

# ---------------------------------------------------------------------------
# topology

NS_P= NS_R= DIR=
setup_scenario() {  # $1 = scenario letter
    local s=$1 ns i
    NS_P="$TAG-$s-p"; NS_R="$TAG-$s-r"
    DIR="$WORK/$s"; mkdir -p "$DIR"; chmod 755 "$DIR"
    ip netns add "$NS_P"; NAMESPACES+=("$NS_P")
    ip netns add "$NS_R"; NAMESPACES+=("$NS_R")
    for ns in "$NS_P" "$NS_R"; do
        ip -n "$ns" link set lo up
        ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
    done
    ip -n "$NS_P" link add veth0 type veth peer name veth0 netns "$NS_R"
    # fixed MACs -> fixed EUI-64 link-local addresses -> reproducible next hops
    ip -n "$NS_P" link set veth0 address 02:00:00:00:00:01
    ip -n "$NS_R" link set veth0 address 02:00:00:00:00:02
    ip -n "$NS_P" addr add 10.0.0.1/30 dev veth0
    ip -n "$NS_R" addr add 10.0.0.2/30 dev veth0
    ip -n "$NS_P" addr add fd00::1/64 dev veth0 nodad
    ip -n "$NS_R" addr add fd00::2/64 dev veth0 nodad
    ip -n "$NS_P" link set veth0 up
    ip -n "$NS_R" link set veth0 up
    for i in $(seq 50); do
        if ip -n "$NS_P" -6 addr show dev veth0 scope link -tentative | grep -q 'fe80::ff:fe00:1/' &&
           ip -n "$NS_R" -6 addr show dev veth0 scope link -tentative | grep -q 'fe80::ff:fe00:2/' &&
           ip -n "$NS_P" link show veth0 | grep -q LOWER_UP &&
           ip -n "$NS_R" link show veth0 | grep -q LOWER_UP; then
            return 0
        fi
        sleep 0.1
    done
    die "veth link in $NS_P/$NS_R did not come up"
}

# ---------------------------------------------------------------------------
# recorder

REC_PID= OUT_FILE=
start_recorder() {  # $1 = listen address, $2 = vector file name, rest: recorder args
    local addr=$1 i
    OUT_FILE="$OUT_DIR/$2"; shift 2
    ip netns exec "$NS_R" python3 "$RECORDER" --listen "$addr" --port 179 \
        --comment-file "$DIR/header.txt" --ready-file "$DIR/rec.ready" \
        --status-file "$DIR/rec.status" --out "$OUT_FILE" --strict "$@" \
        2>"$DIR/recorder.log" &
    REC_PID=$!; PIDS+=("$REC_PID")
    for i in $(seq 50); do [[ -e $DIR/rec.ready ]] && return 0; sleep 0.1; done
    cat "$DIR/recorder.log" >&2
    die "recorder did not start"
}

wait_recorder() {
    local rc=0
    wait "$REC_PID" || rc=$?
    sed 's/^/    /' "$DIR/recorder.log" >&2
    [[ $rc == 0 ]] || die "recorder exited $rc (logs: KEEP_WORK=1, $DIR)"
    PRODUCED+=("$OUT_FILE")
}

rec_status() {  # $1 = key; prints its value from the recorder's status file
    sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" "$DIR/rec.status" 2>/dev/null || true
}

wait_status() {  # $1 = key, $2 = minimum value, $3 = seconds
    local i v
    for i in $(seq $(($3 * 10))); do
        v=$(rec_status "$1"); v=${v:-0}
        (( v >= $2 )) && return 0
        kill -0 "$REC_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "recorder status $1 did not reach $2"
}

header_common() {  # $1 scenario, $2 vector name, $3 daemon version, $4 description
    printf '%s\n' \
        "vector: $2" \
        "captured: $DATE by tests/data/wire/capture/capture.sh scenario $1, bgp_recorder.py as the receiving peer" \
        "peer daemon: $3 (dpkg-query -W), $4" \
        "topology: $TOPOLOGY"
}

quote_args() {  # print arguments, single-quoting those with spaces; $DIR shown as $TMP
    local a out=()
    for a; do
        a=${a//$DIR/\$TMP}
        if [[ $a == *" "* ]]; then out+=("'$a'"); else out+=("$a"); fi
    done
    echo "${out[*]}"
}

# ---------------------------------------------------------------------------
# FRR

BGPD_CMD=() ZEBRA_CMD=()
frr_commands() {  # $1 = zebra|nozebra, $2 = listen address: sets BGPD_CMD, ZEBRA_CMD
    local mode=$1 addr=$2
    ZEBRA_CMD=()
    if [[ $mode == zebra ]]; then
        ZEBRA_CMD=("$ZEBRA" -f "$DIR/zebra.conf" -i "$DIR/zebra.pid" --vty_socket "$DIR"
                   -z "$DIR/zserv.api" -P 0 --log "file:$DIR/zebra.log" --log-level debug)
        BGPD_CMD=("$BGPD" -S)
    else
        BGPD_CMD=("$BGPD" -S -Z)
    fi
    BGPD_CMD+=(-f "$DIR/bgpd.conf" -i "$DIR/bgpd.pid" --vty_socket "$DIR" -z "$DIR/zserv.api"
               -P 0 -l "$addr" --log "file:$DIR/bgpd.log" --log-level debug)
}

start_frr() {  # runs ZEBRA_CMD (if set) and BGPD_CMD in the peer namespace
    local i
    if [[ ${#ZEBRA_CMD[@]} -gt 0 ]]; then
        printf 'hostname frr-zebra\n' >"$DIR/zebra.conf"
        # zebra has no -S and refuses -u root (root is not in group frrvty): it
        # drops to the package's user frr, which must be able to write in $DIR
        chown frr:frr "$DIR"
        ip netns exec "$NS_P" "${ZEBRA_CMD[@]}" >"$DIR/zebra.out" 2>&1 &
        PIDS+=("$!")
        for i in $(seq 50); do [[ -S $DIR/zserv.api ]] && break; sleep 0.1; done
        [[ -S $DIR/zserv.api ]] || die "zebra did not start"
    fi
    ip netns exec "$NS_P" "${BGPD_CMD[@]}" >"$DIR/bgpd.out" 2>&1 &
    PIDS+=("$!")
}

vty() {  # run vtysh commands against our own bgpd only
    ip netns exec "$NS_P" vtysh --vty_socket "$DIR" -d bgpd "$@"
}

frr_header() {  # $1 scenario, $2 vector name, $3 description; after frr_commands
    header_common "$1" "$2" "$FRR_VERSION" "$3"
    [[ ${#ZEBRA_CMD[@]} == 0 ]] || echo "command: $(quote_args "${ZEBRA_CMD[@]}")"
    echo "command: $(quote_args "${BGPD_CMD[@]}")"
    echo "bgpd.conf:"
    sed -e '/^!*$/d' -e 's/^/  /' "$DIR/bgpd.conf"
}

# lines shared by the FRR configs
FRR_GLOBAL=' no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast'
frr_neighbor() {  # $1 neighbor address, $2 remote AS
    printf ' neighbor %s %s\n' "$1" "remote-as $2" "$1" "timers connect 5" "$1" "advertisement-interval 0"
}

# ---------------------------------------------------------------------------
# GoBGP

GOBGP_SOCK= GOBGPD_CMD=()
start_gobgpd() {  # config in $DIR/gobgpd.toml
    local i
    GOBGP_SOCK="unix://$DIR/gobgp.sock"
    GOBGPD_CMD=(gobgpd -f "$DIR/gobgpd.toml" --api-hosts "$GOBGP_SOCK" --pprof-disable -p -l debug)
    # own UTS namespace with a fixed host name: GoBGP sends it in the FQDN capability
    ip netns exec "$NS_P" unshare --uts -- sh -c 'hostname gobgp-peer && exec "$@"' sh \
        "${GOBGPD_CMD[@]}" >"$DIR/gobgpd.log" 2>&1 &
    PIDS+=("$!")
    for i in $(seq 100); do [[ -S $DIR/gobgp.sock ]] && return 0; sleep 0.1; done
    cat "$DIR/gobgpd.log" >&2
    die "gobgpd did not start"
}

gobgp_cli() {
    echo "gobgp --target $(quote_args "$GOBGP_SOCK" "$@")" >>"$DIR/actions.txt"
    ip netns exec "$NS_P" gobgp --target "$GOBGP_SOCK" "$@" >/dev/null
}

gobgp_header() {  # $1 scenario, $2 vector name, $3 description, $4 neighbor; after the rib adds
    header_common "$1" "$2" "$GOBGP_VERSION" "$3"
    echo "command: $(quote_args "${GOBGPD_CMD[@]}") (in its own UTS namespace, host name gobgp-peer)"
    echo "gobgpd.toml:"
    sed -e '/^\s*$/d' -e 's/^/  /' "$DIR/gobgpd.toml"
    echo "then, in this order (the neighbor is configured admin-down until all routes are in):"
    sed -e 's/^/  /' "$DIR/actions.txt"
    echo "  gobgp --target $(quote_args "$GOBGP_SOCK") neighbor $4 enable"
}

GOBGP_GR='  [neighbors.graceful-restart.config]
    # GoBGP 3.10 sends End-of-RIB only when graceful restart is enabled
    enabled = true
    restart-time = 120'

# ---------------------------------------------------------------------------
# scenarios

scenario_a() {  # FRR eBGP IPv4, transitive LB, several attribute sets
    local name=frr_ebgp_ipv4_lb_transitive.hex
    setup_scenario a
    cat >"$DIR/bgpd.conf" <<CONF
hostname frr-peer
debug bgp neighbor-events
route-map LB1G permit 10
 set extcommunity bandwidth 1000
route-map LB1G-COMM permit 10
 set extcommunity bandwidth 1000
 set community 65001:100
 set large-community 65001:1:2
route-map LB1G-MED-PREPEND permit 10
 set extcommunity bandwidth 1000
 set metric 50
 set as-path prepend 65001 65001
route-map LB10G-COMM permit 10
 set extcommunity bandwidth 10000
 set community 65001:100 65001:200
router bgp 65001
 bgp router-id 10.0.0.1
$FRR_GLOBAL
$(frr_neighbor 10.0.0.2 65000)
 address-family ipv4 unicast
  network 10.1.0.0/24 route-map LB1G
  network 10.1.1.0/24 route-map LB1G
  network 10.1.2.0/24 route-map LB1G
  network 10.1.3.0/24 route-map LB1G
  network 10.1.4.0/24 route-map LB1G-COMM
  network 10.1.5.0/24 route-map LB1G-COMM
  network 10.1.6.0/24 route-map LB1G-COMM
  network 10.1.7.0/24 route-map LB1G-MED-PREPEND
  network 10.1.8.0/24 route-map LB10G-COMM
  network 10.1.9.0/24
  network 10.99.0.1/32 route-map LB1G
  neighbor 10.0.0.2 activate
 exit-address-family
CONF
    start_recorder 10.0.0.2 "$name" --local-as 65000 --router-id 10.0.0.2 --timeout 60
    frr_commands nozebra 10.0.0.1
    frr_header a "$name" "eBGP AS 65001 -> recorder AS 65000 over IPv4 (10.0.0.1 -> 10.0.0.2), bgpd -Z (no zebra); LB 1000 Mbit/s transitive (0x00) on all but 10.1.9.0/24, 10000 Mbit/s on 10.1.8.0/24" >"$DIR/header.txt"
    start_frr
    wait_recorder
    stop_all
}

scenario_b() {  # FRR iBGP IPv4, non-transitive LB, LOCAL_PREF
    local name=frr_ibgp_ipv4_lb_nontransitive.hex
    setup_scenario b
    cat >"$DIR/bgpd.conf" <<CONF
hostname frr-peer
debug bgp neighbor-events
route-map LB2500NT permit 10
 set extcommunity bandwidth 2500 non-transitive
 set local-preference 200
route-map LB2500NT-COMM permit 10
 set extcommunity bandwidth 2500 non-transitive
 set community 65000:300
 set large-community 65000:3:4
 set metric 10
route-map LB2500NT-DEFLP permit 10
 set extcommunity bandwidth 2500 non-transitive
router bgp 65000
 bgp router-id 10.0.0.1
$FRR_GLOBAL
$(frr_neighbor 10.0.0.2 65000)
 address-family ipv4 unicast
  network 10.2.0.0/24 route-map LB2500NT
  network 10.2.1.0/24 route-map LB2500NT
  network 10.2.2.0/24 route-map LB2500NT
  network 10.2.3.0/24 route-map LB2500NT-COMM
  network 10.2.4.0/24 route-map LB2500NT-DEFLP
  network 10.2.5.0/24
  neighbor 10.0.0.2 activate
 exit-address-family
CONF
    start_recorder 10.0.0.2 "$name" --local-as 65000 --router-id 10.0.0.2 --timeout 60
    frr_commands nozebra 10.0.0.1
    frr_header b "$name" "iBGP AS 65000 -> recorder AS 65000 over IPv4 (10.0.0.1 -> 10.0.0.2), bgpd -Z (no zebra); LB 2500 Mbit/s non-transitive (0x40) on all but 10.2.5.0/24; LOCAL_PREF 200 on 10.2.0-2.0/24, default 100 elsewhere" >"$DIR/header.txt"
    start_frr
    wait_recorder
    stop_all
}

scenario_c() {  # FRR eBGP over IPv6, 32-byte next hop (global + link-local)
    local name=frr_ebgp_ipv6_linklocal.hex
    setup_scenario c
    cat >"$DIR/bgpd.conf" <<CONF
hostname frr-peer
debug bgp neighbor-events
route-map LB1G permit 10
 set extcommunity bandwidth 1000
route-map LB5G-COMM permit 10
 set extcommunity bandwidth 5000
 set community 65001:600
 set large-community 65001:6:6
router bgp 65001
 bgp router-id 10.0.0.1
$FRR_GLOBAL
$(frr_neighbor fd00::2 65000)
 address-family ipv6 unicast
  network 2001:db8:1::/48 route-map LB1G
  network 2001:db8:2::/48 route-map LB1G
  network 2001:db8:3::/48 route-map LB1G
  network 2001:db8:4::/48 route-map LB5G-COMM
  network 2001:db8:ffff:1::/64 route-map LB1G
  neighbor fd00::2 activate
 exit-address-family
CONF
    start_recorder fd00::2 "$name" --local-as 65000 --router-id 10.0.0.2 --timeout 60
    frr_commands zebra fd00::1
    frr_header c "$name" "eBGP AS 65001 -> recorder AS 65000 over IPv6 (fd00::1 -> fd00::2), bgpd with zebra in the same namespace (bgpd -Z does not learn its interfaces and then sends only the 16-byte global next hop, as in frr_ebgp_ipv4_extnexthop.hex); MP_REACH next hop fd00::1 + fe80::ff:fe00:1; LB transitive 1000 Mbit/s, 5000 Mbit/s on 2001:db8:4::/48" >"$DIR/header.txt"
    start_frr
    wait_recorder
    stop_all
}

scenario_d() {  # GoBGP, 4-octet AS, LB via export policy, IPv4 + IPv6
    local name=gobgp_ebgp_ipv4_lb_4octet.hex
    setup_scenario d
    cat >"$DIR/gobgpd.toml" <<CONF
[global.config]
  as = 4200000001
  router-id = "10.0.0.1"
  port = -1
[global.apply-policy.config]
  export-policy-list = ["lb-export"]
  default-export-policy = "accept-route"
[[defined-sets.prefix-sets]]
  prefix-set-name = "no-lb"
  [[defined-sets.prefix-sets.prefix-list]]
    ip-prefix = "10.4.9.0/24"
[[defined-sets.prefix-sets]]
  prefix-set-name = "lb-as4"
  [[defined-sets.prefix-sets.prefix-list]]
    ip-prefix = "10.4.1.0/24"
[[policy-definitions]]
  name = "lb-export"
  [[policy-definitions.statements]]
    name = "lb-4octet-as"
    [policy-definitions.statements.conditions.match-prefix-set]
      prefix-set = "lb-as4"
    [policy-definitions.statements.actions]
      route-disposition = "accept-route"
    [policy-definitions.statements.actions.bgp-actions.set-ext-community]
      options = "add"
      [policy-definitions.statements.actions.bgp-actions.set-ext-community.set-ext-community-method]
        communities-list = ["lb:4200000001:12500000"]
  [[policy-definitions.statements]]
    name = "skip-no-lb"
    [policy-definitions.statements.conditions.match-prefix-set]
      prefix-set = "no-lb"
    [policy-definitions.statements.actions]
      route-disposition = "accept-route"
  [[policy-definitions.statements]]
    name = "add-lb"
    [policy-definitions.statements.actions]
      route-disposition = "accept-route"
    [policy-definitions.statements.actions.bgp-actions.set-ext-community]
      options = "add"
      [policy-definitions.statements.actions.bgp-actions.set-ext-community.set-ext-community-method]
        communities-list = ["lb:65001:12500000"]
    [policy-definitions.statements.actions.bgp-actions.set-large-community]
      options = "add"
      [policy-definitions.statements.actions.bgp-actions.set-large-community.set-large-community-method]
        communities-list = ["4200000001:1:2"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "10.0.0.2"
    peer-as = 65000
    admin-down = true
  [neighbors.timers.config]
    connect-retry = 5
  [neighbors.transport.config]
    local-address = "10.0.0.1"
$GOBGP_GR
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv6-unicast"
CONF
    start_recorder 10.0.0.2 "$name" --local-as 65000 --router-id 10.0.0.2 --timeout 60
    start_gobgpd
    gobgp_cli global rib add -a ipv4 10.4.0.0/24
    gobgp_cli global rib add -a ipv4 10.4.1.0/24
    gobgp_cli global rib add -a ipv4 10.4.2.0/24 community 65001:100
    gobgp_cli global rib add -a ipv4 10.4.3.0/24 med 20 aspath 4200000001,4200000001
    gobgp_cli global rib add -a ipv4 10.4.9.0/24
    gobgp_cli global rib add -a ipv4 10.99.4.1/32
    gobgp_cli global rib add -a ipv6 2001:db8:40::/48
    gobgp_cli global rib add -a ipv6 2001:db8:41::/48 community 65001:200
    gobgp_cli global rib add -a ipv6 2001:db8:4f:1::/64
    {
        gobgp_header d "$name" "eBGP AS 4200000001 -> recorder AS 65000 over IPv4 (10.0.0.1 -> 10.0.0.2), families ipv4-unicast + ipv6-unicast; export policy: lb:65001:12500000 (100 Mbit/s) + large community 4200000001:1:2 on every route except 10.4.9.0/24 (nothing) and 10.4.1.0/24 (lb:4200000001:12500000 only)" 10.0.0.2
        echo "observed: every LB is sent as 0x40 (non-transitive); lb:4200000001:... is encoded with AS 65535 (ff ff), not AS_TRANS 23456; IPv6 routes carry the IPv4-mapped next hop ::ffff:10.0.0.1 (IPv4 transport); the order of the UPDATEs varies between runs"
    } >"$DIR/header.txt"
    gobgp_cli neighbor 10.0.0.2 enable
    wait_recorder
    stop_all
}

scenario_e() {  # GoBGP ADD-PATH send, IPv6 transport
    local name=gobgp_ebgp_ipv6_addpath.hex
    setup_scenario e
    cat >"$DIR/gobgpd.toml" <<CONF
[global.config]
  as = 65002
  router-id = "10.0.0.1"
  port = -1
[global.apply-policy.config]
  export-policy-list = ["lb-export"]
  default-export-policy = "accept-route"
[[policy-definitions]]
  name = "lb-export"
  [[policy-definitions.statements]]
    name = "add-lb"
    [policy-definitions.statements.actions]
      route-disposition = "accept-route"
    [policy-definitions.statements.actions.bgp-actions.set-ext-community]
      options = "add"
      [policy-definitions.statements.actions.bgp-actions.set-ext-community.set-ext-community-method]
        communities-list = ["lb:65002:1250000000"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "fd00::2"
    peer-as = 65000
    admin-down = true
  [neighbors.timers.config]
    connect-retry = 5
  [neighbors.transport.config]
    local-address = "fd00::1"
$GOBGP_GR
  [neighbors.add-paths.config]
    send-max = 8
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv6-unicast"
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
CONF
    start_recorder fd00::2 "$name" --local-as 65000 --router-id 10.0.0.2 --add-path ipv4,ipv6 --timeout 60
    start_gobgpd
    gobgp_cli global rib add -a ipv6 2001:db8:50::/48 identifier 1 med 10
    gobgp_cli global rib add -a ipv6 2001:db8:50::/48 identifier 2 med 20
    gobgp_cli global rib add -a ipv6 2001:db8:50::/48 identifier 3 med 30 community 65002:3
    gobgp_cli global rib add -a ipv6 2001:db8:51::/48 identifier 7
    gobgp_cli global rib add -a ipv6 2001:db8:5f:1::/64
    gobgp_cli global rib add -a ipv4 10.5.0.0/24 identifier 1 med 10
    gobgp_cli global rib add -a ipv4 10.5.0.0/24 identifier 2 med 20
    {
        gobgp_header e "$name" "eBGP AS 65002 -> recorder AS 65000 over IPv6 (fd00::1 -> fd00::2), families ipv6-unicast + ipv4-unicast, ADD-PATH send-max 8 (recorder: ADD-PATH receive for both, no extended next hop); export policy: lb:65002:1250000000 (10 Gbit/s) on every route" fd00::2
        echo "observed: path ids are GoBGP's own (1, 2, 3 per prefix; 'identifier 7' goes out as path id 1); IPv4 routes are sent in MP_REACH with the IPv6 next hop fd00::1 although extended next hop (RFC 8950) was not negotiated; the order of the UPDATEs varies between runs"
    } >"$DIR/header.txt"
    gobgp_cli neighbor fd00::2 enable
    wait_recorder
    stop_all
}

scenario_f() {  # FRR RFC 8950: IPv4 NLRI with IPv6 next hop
    local name=frr_ebgp_ipv4_extnexthop.hex
    setup_scenario f
    cat >"$DIR/bgpd.conf" <<CONF
hostname frr-peer
debug bgp neighbor-events
route-map LB1G permit 10
 set extcommunity bandwidth 1000
router bgp 65001
 bgp router-id 10.0.0.1
$FRR_GLOBAL
$(frr_neighbor fd00::2 65000)
 neighbor fd00::2 capability extended-nexthop
 address-family ipv4 unicast
  network 10.6.0.0/24 route-map LB1G
  network 10.6.1.0/24 route-map LB1G
  network 10.6.2.0/24
  neighbor fd00::2 activate
 exit-address-family
 address-family ipv6 unicast
  network 2001:db8:6::/48 route-map LB1G
  neighbor fd00::2 activate
 exit-address-family
CONF
    start_recorder fd00::2 "$name" --local-as 65000 --router-id 10.0.0.2 --ext-nexthop --timeout 60
    frr_commands nozebra fd00::1
    frr_header f "$name" "eBGP AS 65001 -> recorder AS 65000 over IPv6 (fd00::1 -> fd00::2) with RFC 8950 extended next hop for IPv4 unicast (recorder advertises it too), bgpd -Z (no zebra, so next hops are the 16-byte global fd00::1 only); IPv4 NLRI in MP_REACH AFI 1; IPv4 End-of-RIB is the plain 23-byte UPDATE" >"$DIR/header.txt"
    start_frr
    wait_recorder
    stop_all
}

scenario_g() {  # FRR withdraw, then Cease/Administrative Shutdown with message
    local name=frr_withdraw_and_notification.hex
    setup_scenario g
    cat >"$DIR/bgpd.conf" <<CONF
hostname frr-peer
debug bgp neighbor-events
route-map LB1G permit 10
 set extcommunity bandwidth 1000
router bgp 65001
 bgp router-id 10.0.0.1
$FRR_GLOBAL
$(frr_neighbor 10.0.0.2 65000)
 address-family ipv4 unicast
  network 10.7.0.0/24 route-map LB1G
  network 10.7.1.0/24 route-map LB1G
  network 10.7.2.0/24 route-map LB1G
  neighbor 10.0.0.2 activate
 exit-address-family
CONF
    start_recorder 10.0.0.2 "$name" --local-as 65000 --router-id 10.0.0.2 --timeout 90 --until notification
    local withdraw=(-c 'configure terminal' -c 'router bgp 65001' -c 'address-family ipv4 unicast' -c 'no network 10.7.2.0/24')
    local shutdown=(-c 'configure terminal' -c 'router bgp 65001' -c 'neighbor 10.0.0.2 shutdown message maintenance')
    frr_commands nozebra 10.0.0.1
    {
        frr_header g "$name" "eBGP AS 65001 -> recorder AS 65000 over IPv4 (10.0.0.1 -> 10.0.0.2), bgpd -Z (no zebra); recorded until the NOTIFICATION"
        echo "after the End-of-RIB: vtysh --vty_socket \$TMP -d bgpd $(quote_args "${withdraw[@]}")"
        echo "after the withdraw arrived: vtysh --vty_socket \$TMP -d bgpd $(quote_args "${shutdown[@]}")"
    } >"$DIR/header.txt"
    start_frr
    wait_status eor 1 60
    vty "${withdraw[@]}"
    wait_status withdraws 1 30
    vty "${shutdown[@]}"
    wait_recorder
    stop_all
}

# ---------------------------------------------------------------------------
# main

ALL_SCENARIOS="a b c d e f g"
SCENARIOS=${*:-$ALL_SCENARIOS}
for s in $SCENARIOS; do
    declare -F "scenario_$s" >/dev/null || die "unknown scenario '$s' (known: $ALL_SCENARIOS)"
done
mkdir -p "$OUT_DIR"
PRODUCED=()
for s in $SCENARIOS; do
    log "scenario $s"
    "scenario_$s"
done
log "checking ${#PRODUCED[@]} file(s)"
python3 "$CHECKER" "${PRODUCED[@]}"
log "done: $SCENARIOS -> $OUT_DIR"
