#!/usr/bin/env bash
# Builds the real Kubernetes parts the cluster tests run, once each, into a cache outside the repo keyed by version:
# kube-apiserver, kube-scheduler and kube-controller-manager (k8s.io/kubernetes), kwok, Kueue's controller and helm
# (etcd is Debian's etcd-server, which `make kube` installs). Prints a directory of links to this set's binaries.
#
# k8s.io/kubernetes names its staging modules by relative `replace` lines that its module zip leaves out, so it is
# built from a small wrapper module that requires it and replaces each staging module by its published release.
#
# `kube-build.sh --check` builds nothing: it prints the directory when every binary is there, else names the missing
# ones and exits 1 (the tests' way to find them without starting a build of minutes inside a test).
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
KUEUE_VERSION="${KUEUE_VERSION:-v0.17.0}"
HELM_VERSION="${HELM_VERSION:-v3.22.1}"
CACHE="${HETERO_KUBE_CACHE:-$HOME/.cache/jupyter-hetero/kube}"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--trimpath}"

log() { echo "kube-build: $*" >&2; }

# The built binary of one tool at one version: $CACHE/<tool>/<version>/<tool>.
built() { echo "$CACHE/$1/$2/$1"; }
# Kubernetes' own build stamps its version into the binaries (hack/lib/version.sh); without it the API server answers
# /version with v0.0.0-master+$Format:%H$, which Kueue cannot parse and exits on. The "stamped" directory keeps
# binaries of an earlier, unstamped build of this script from being taken for these.
kube_built() { built "$1" "$KUBE_VERSION-stamped"; }

build_kubernetes() {
  local tools=(kube-apiserver kube-scheduler kube-controller-manager) missing=() tool
  for tool in "${tools[@]}"; do [[ -x "$(kube_built "$tool")" ]] || missing+=("$tool"); done
  [[ ${#missing[@]} -eq 0 ]] && return
  local work="$CACHE/wrapper/$KUBE_VERSION" minor="v0${KUBE_VERSION#v1}" gomod
  mkdir -p "$work"
  gomod="$(cd "$work" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  {
    printf 'module hetero.local/kubebuild\n\ngo 1.24\n\nrequire k8s.io/kubernetes %s\n\n' "$KUBE_VERSION"
    # Each `k8s.io/x => ./staging/src/k8s.io/x` of kubernetes' go.mod, pointed at k8s.io/x's release of this minor.
    sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#replace \1 => \1 '"$minor"'#p' "$gomod"
  } > "$work/go.mod"
  {
    printf 'package kubebuild\n\nimport (\n'
    for tool in "${tools[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$tool"; done
    printf ')\n'
  } > "$work/tools.go"
  (cd "$work" && go mod tidy)
  local major="${KUBE_VERSION#v}" stamp
  major="${major%%.*}"
  minor="${KUBE_VERSION#v*.}"
  minor="${minor%%.*}"
  stamp="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$major"
  stamp+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  for tool in "${missing[@]}"; do
    log "building $tool $KUBE_VERSION (the first build takes minutes)"
    mkdir -p "$(dirname "$(kube_built "$tool")")"
    (cd "$work" && go build -ldflags "-s -w $stamp" -o "$(kube_built "$tool")" "k8s.io/kubernetes/cmd/$tool")
  done
}

build_tool() {  # name package version
  local name="$1" package="$2" version="$3"
  [[ -x "$(built "$name" "$version")" ]] && return
  log "building $name $version"
  mkdir -p "$(dirname "$(built "$name" "$version")")"
  GOBIN="$(dirname "$(built "$name" "$version")")" go install -ldflags "-s -w" "$package@$version"
}

if [[ "${1:-}" == "--check" ]]; then
  missing=()
  for pair in "kube-apiserver $KUBE_VERSION-stamped" "kube-scheduler $KUBE_VERSION-stamped" \
              "kube-controller-manager $KUBE_VERSION-stamped" \
              "kwok $KWOK_VERSION" "kueue $KUEUE_VERSION" "helm $HELM_VERSION"; do
    read -r name version <<<"$pair"
    [[ -x "$(built "$name" "$version")" ]] || missing+=("$(built "$name" "$version")")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "kube-build: not built yet (run \`make kube\` or scripts/kube-build.sh): ${missing[*]}" >&2
    exit 1
  fi
fi

build_kubernetes
build_tool kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"
build_tool kueue sigs.k8s.io/kueue/cmd/kueue "$KUEUE_VERSION"
build_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"

set_dir="$CACHE/bin/kube-$KUBE_VERSION-kwok-$KWOK_VERSION-kueue-$KUEUE_VERSION-helm-$HELM_VERSION"
mkdir -p "$set_dir"
for pair in "kube-apiserver $KUBE_VERSION-stamped" "kube-scheduler $KUBE_VERSION-stamped" \
            "kube-controller-manager $KUBE_VERSION-stamped" \
            "kwok $KWOK_VERSION" "kueue $KUEUE_VERSION" "helm $HELM_VERSION"; do
  read -r name version <<<"$pair"
  ln -sfn "$(built "$name" "$version")" "$set_dir/$name"
done
echo "$set_dir"
