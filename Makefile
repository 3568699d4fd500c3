# jupyter-hetero: two commands do all the set-up on a fresh machine.
#   make demo   installs into .venv/ and starts JupyterLab with the extension and a demo catalog
#   make test   installs into .venv/ (and Debian's chromium, postgresql and etcd-server for the browser, store and
#               real-cluster tests), builds the Kubernetes binaries once (`make kube`) and runs every test

VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.hetero-installed
SUDO   := $(if $(filter 0,$(shell id -u)),,sudo)
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
PORT   ?= 8888

.PHONY: install sandbox browser postgres kube demo test test-fast lint clean i18n i18n-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

LAB_SOURCES := $(shell find labextension/src labextension/style labextension/schema -type f 2>/dev/null)

$(STAMP): $(PY) pyproject.toml labextension/package.json labextension/package-lock.json $(LAB_SOURCES)
	$(PY) -m pip install --quiet -e ".[test,lab]"
	# pip skips the extension build when one exists; rebuild it so source edits always show.
	cd labextension && PATH="$(abspath $(VENV))/bin:$$PATH" npm run build --silent
	# The environment serves that build itself (a link), not the copy pip made of the previous one.
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/jupyter labextension develop --overwrite . >/dev/null
	touch $(STAMP)

install: $(STAMP) sandbox

# Debian's bubblewrap: every job, service replica and kernel runs in its sandbox (HeteroApp.sandbox, docs/jobs.md);
# a team or hub server refuses to start without it.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq bubblewrap)

# Debian's chromium drives the browser tests (Playwright never downloads a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)

# Debian's postgresql: the store tests start a private server from its binaries (Debian keeps them
# off PATH, in /usr/lib/postgresql/<version>/bin), so no cluster of the machine is used.
postgres:
	@command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || \
		($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq postgresql)

# A real Kubernetes control plane for tests/kube/test_real_cluster.py: Debian's etcd-server, and kube-apiserver,
# kube-scheduler, kube-controller-manager, kwok, Kueue and helm built once by scripts/kube-build.sh (Go 1.24 or
# later and the Go module proxy) into ~/.cache/jupyter-hetero/kube, outside the repo (HETERO_KUBE_CACHE moves it).
kube:
	@command -v etcd >/dev/null 2>&1 || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq etcd-server)
	@bash scripts/kube-build.sh >/dev/null

demo: install
	$(VENV)/bin/jupyter lab --no-browser $(ROOT_FLAG) --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--HeteroApp.emulated_nodes_file=binder/demo-nodes.yaml

# Translations (Python and panel, one catalog per locale): `make i18n` extracts the strings into the
# catalogs (translate the new empty entries, then `make i18n` again compiles them); `make i18n-check`
# fails on a missing, stale or fuzzy zh_CN string, or a compiled catalog older than its .po.
i18n: install
	$(PY) scripts/i18n.py update
	$(PY) scripts/i18n.py compile

i18n-check: install
	$(PY) scripts/i18n.py check

# Most tests wait on servers, kernels and jobs rather than compute, so two workers (one per module, so a
# module's servers stay with its tests) halve the time on two cores. The browser tests run apart and last:
# Playwright's synchronous API keeps an event loop running in its worker, which the others' loops cannot share.
PYTEST_WORKERS ?= 2

# KUBECONFIG is unset so that the real-cluster tests run against the control plane they start, never a cluster
# of the shell's (run tests/kube/test_real_cluster.py by hand with KUBECONFIG for that).
test: install browser postgres kube i18n-check
	cd labextension && npm test
	env -u KUBECONFIG $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not ui"
	$(PY) -m pytest -m ui

test-fast: install kube
	env -u KUBECONFIG $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "not ui"

clean:
	rm -rf $(VENV) labextension/node_modules labextension/lib jupyter_hetero/labextension test-output
