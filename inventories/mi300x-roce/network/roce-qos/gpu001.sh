#!/bin/sh
# clusterforge: lossless RoCE on the compute ports of gpu001: trust DSCP, PFC on the fabric's priority;
# installed as /usr/local/sbin/clusterforge-roce-qos.sh, run at boot by /etc/systemd/system/clusterforge-roce-qos.service
set -e
# ens1 (rail 1): interface name unknown (CF-NET-001): not configured
# ens2 (rail 2): interface name unknown (CF-NET-001): not configured
# ens3 (rail 3): interface name unknown (CF-NET-001): not configured
# ens4 (rail 4): interface name unknown (CF-NET-001): not configured
# ens5 (rail 5): interface name unknown (CF-NET-001): not configured
# ens6 (rail 6): interface name unknown (CF-NET-001): not configured
# ens7 (rail 7): interface name unknown (CF-NET-001): not configured
# ens8 (rail 8): interface name unknown (CF-NET-001): not configured
