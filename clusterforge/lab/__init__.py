"""`clusterforge lab`: the rendered cluster brought up as a simulated twin on one Debian machine (root), to
prove the playbook and the rendered files on day one and day two (docs/lab.md).

image (the node image, cached), shape (the twin read from the rendered folder, and its shape-true subset),
network (namespaces, veths, bridges; isolation proven), containers (systemd-nspawn nodes), repo (the apt
repository: Slurm and munge, stub GPU packages), play (ansible-playbook over ssh), checks (`lab check`),
twin (up and down). The CLI is in cli.py.
"""
