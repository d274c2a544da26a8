#!/bin/sh
# Runs inside the VM bench/link.bench.ts boots (test/gadget/fixtures/vm.ts: Debian's kernel, which has sch_netem):
# the servers in a network namespace of their own behind a veth pair whose both ends delay and pace with tc netem,
# the clients in the VM's own namespace. $OUT/config sets LINKS ("RTT_MS:FILES ..."), ROUNDS and RATE. Each timed
# step is a line "time RTT FILES CASE ROUND SECONDS" in $OUT/results.txt; link.bench.ts reads them.
set -u
P=$(cd "$(dirname "$0")/.." && pwd)
R=$OUT/results.txt
. "$OUT/config"
: > "$R"
result() { echo "$*" >> "$R"; echo "RESULT $*"; }
# until_ok CMD: retries CMD every 0.2 s for up to 60 s.
until_ok() { i=0; while ! "$@" >/dev/null 2>&1; do i=$((i + 1)); [ $i -ge 300 ] && return 1; sleep 0.2; done; }
fail() { result error "$*"; exit 1; }

modprobe -a veth sch_netem || fail "cannot load veth and sch_netem"
ip link set lo up
ip netns add srv || fail "cannot make a network namespace"
ip link add cli type veth peer name srv netns srv || fail "cannot make a veth pair"
ip addr add 10.9.0.1/24 dev cli && ip link set cli up
ip -n srv addr add 10.9.0.2/24 dev srv && ip -n srv link set srv up && ip -n srv link set lo up
# Both directions: half the round trip each, paced at RATE.
link() {
  tc qdisc replace dev cli root netem delay "$1" rate "$RATE" || fail "tc netem refused"
  ip netns exec srv tc qdisc replace dev srv root netem delay "$1" rate "$RATE" || fail "tc netem refused in the namespace"
}

DEV=10.9.0.2
API=http://$DEV:8080
CARD=$TMPDIR/top/card
mkdir -p "$CARD" /run/vsftpd/empty
chown ftp:ftp "$CARD"

ip netns exec srv node "$P/bin/framefi-device" --host $DEV --port 8080 --setup-port 8081 --ftp-port 2121 --card "$CARD" \
  --state "$TMPDIR/state" --boot-delay 0 > "$OUT/device.log" 2>&1 &
until_ok curl -sf $API/ || fail "the device did not start"
curl -sf -X POST $API/mode/ftp > /dev/null || fail "POST /mode/ftp failed"
until_ok curl -sf --list-only "ftp://user:password@$DEV:2121/" || fail "the device's FTP server did not start"

cat > "$TMPDIR/vsftpd.conf" <<EOF
listen=YES
listen_ipv6=NO
listen_address=$DEV
listen_port=21
background=NO
anonymous_enable=YES
local_enable=NO
anon_root=$TMPDIR/top
no_anon_password=YES
write_enable=YES
anon_upload_enable=YES
anon_mkdir_write_enable=YES
anon_other_write_enable=YES
anon_umask=022
seccomp_sandbox=NO
pasv_min_port=30000
pasv_max_port=30100
xferlog_enable=NO
secure_chroot_dir=/run/vsftpd/empty
EOF
ip netns exec srv vsftpd "$TMPDIR/vsftpd.conf" > "$OUT/vsftpd.log" 2>&1 &
until_ok curl -sf --list-only "ftp://anonymous:bench@$DEV:21/card/" || fail "vsftpd did not start"

lftp_mirror() { # PORT USER PASS PARALLEL TREE TARGET
  lftp -c "set ftp:ssl-allow no; set net:max-retries 1; open -u '$2','$3' -p $1 $DEV; mirror -R --only-missing --no-perms --parallel=$4 '$5' '$6'"
}
run_case() { # CASE TREE TAG
  case $1 in
    sync4) node "$P/bin/framefi" --host $DEV:8080 sync --ftp-port 2121 --stay --to "/$3" "$2" ;;
    ours4) lftp_mirror 2121 user password 4 "$2" "/$3" ;;
    ours1) lftp_mirror 2121 user password 1 "$2" "/$3" ;;
    vsftpd1) lftp_mirror 21 anonymous bench 1 "$2" "/card/$3" ;;
  esac
}
CASES="sync4 ours4 ours1 vsftpd1"

# What starting the client costs here (the VM's CPU is emulated): framefi is a Node program, lftp is not.
t0=$(date +%s%N)
node "$P/bin/framefi" --version > /dev/null
t1=$(date +%s%N)
result startup framefi "$(awk "BEGIN { print ($t1 - $t0) / 1e9 }")"

for spec in $LINKS; do
  rtt=${spec%%:*}
  files=${spec##*:}
  tree=$TMPDIR/tree-$files
  # One copy of each tree the host prepared into the VM's memory: the clients must not read over 9p while timed.
  [ -d "$tree" ] || cp -r "$OUT/tree-$files" "$tree" || fail "cannot copy the photos"
  link "$(awk "BEGIN { print $rtt / 2 }")ms"
  round=1
  while [ $round -le "$ROUNDS" ]; do
    # Each round starts one case later than the one before.
    order=$CASES
    i=1
    while [ $i -lt $round ]; do order="${order#* } ${order%% *}"; i=$((i + 1)); done
    for c in $order; do
      tag=$c-$rtt-$files-$round
      t0=$(date +%s%N)
      run_case "$c" "$tree" "$tag" > "$OUT/$tag.log" 2>&1 || fail "$c failed at ${rtt} ms, $files files (see $tag.log)"
      t1=$(date +%s%N)
      got=$(find "$CARD/$tag" -type f | wc -l)
      [ "$got" -eq "$files" ] || fail "$c stored $got of $files files at ${rtt} ms"
      rm -rf "${CARD:?}/$tag"
      result time "$rtt" "$files" "$c" "$round" "$(awk "BEGIN { print ($t1 - $t0) / 1e9 }")"
    done
    round=$((round + 1))
  done
done
result done yes
