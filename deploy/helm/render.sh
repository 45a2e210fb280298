#!/usr/bin/env bash
# Writes deploy/switchyard.yaml from the chart (deploy/helm/render).
set -euo pipefail
cd "$(dirname "$0")/../.."
"${GO:-go}" run ./deploy/helm/render
