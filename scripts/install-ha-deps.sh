#!/bin/sh
# Installs what `make check-ha` (tests/ha.sh) needs beside
# scripts/install-deps.sh's packages: Debian 12's Patroni and etcd (the
# server, and the client for etcdctl), through install-deps.sh (only
# what is missing, apt-get as root or through sudo).
#
# The packages start their own etcd (and Patroni, if configured) as
# system services; the test runs its own three etcd and its Patroni
# nodes on loopback, so those services are stopped and disabled: a
# system etcd on 2379/2380 would take the test's ports and hold a
# cluster no one asked for.
set -eu

sh "$(dirname "$0")/install-deps.sh" patroni etcd-server etcd-client

if [ "$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null 2>&1; then
    sudo=""
else
    sudo="sudo"
fi

# The system services, stopped and kept from starting at boot, whether
# this run installed them or an earlier one did; nothing is done (and
# sudo not asked for) when they are already off. systemd when it runs;
# else the packages' init scripts, and systemd's links for later boots.
# Only the services are stopped, by their own pid files: an etcd or
# Patroni of a test is none of this script's business.
for svc in etcd patroni; do
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        if systemctl is-enabled --quiet "$svc" 2>/dev/null ||
            systemctl is-active --quiet "$svc" 2>/dev/null; then
            echo "install-ha-deps: stopping and disabling the system $svc service"
            $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true
        fi
        continue
    fi
    running=no
    for pidfile in "/run/$svc.pid" "/var/run/$svc.pid"; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && running=yes
    done
    enabled=no
    ls /etc/rc[2-5].d/S*"$svc" >/dev/null 2>&1 && enabled=yes
    [ -e "/etc/systemd/system/multi-user.target.wants/$svc.service" ] && enabled=yes
    if [ $running = yes ] && [ -x "/etc/init.d/$svc" ]; then
        echo "install-ha-deps: stopping the system $svc service"
        $sudo "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    fi
    if [ $enabled = yes ]; then
        echo "install-ha-deps: disabling the system $svc service"
        # update-rc.d disables both the init script's links and systemd's.
        $sudo update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
done
exit 0
