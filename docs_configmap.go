package main

import (
	"fmt"
	"io"

	"switchyard.dev/switchyard/stages/translator"
)

// writeConfigMapDocs writes docs/configmap.md: every controller ConfigMap
// key of ingress-nginx, and Switchyard's own, with what Switchyard does
// with it. "implemented" comes from the translator's parsers, so a new key
// parser changes this table by itself.
func writeConfigMapDocs(w io.Writer) {
	statuses := translator.KeyStatuses()
	counts := map[string]int{}
	for _, k := range statuses {
		counts[k.Status]++
	}
	fmt.Fprintln(w, "# Controller ConfigMap keys")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated from the translator's key parsers and the catalog of ingress-nginx's keys (internal/catalog/configmap.txt); `go test -run TestConfigMapDocsAreCurrent -update .` rewrites it.")
	fmt.Fprintf(w, "%d keys: %d implemented, %d not supported (reported as `NotSupported`, a warning), %d removed from ingress-nginx itself (`NotSupported`), %d refused (`Refused`, logged at error level: snippets, and keys whose absence would let traffic through unprotected). ",
		len(statuses), counts["implemented"], counts["ignored"], counts["removed"], counts["refused"])
	fmt.Fprintln(w, "A key that is neither ingress-nginx's nor Switchyard's is reported as `UnknownKey`. An invalid value is reported as `InvalidValue` and the default is kept, except for the access keys (whitelist-source-range, denylist-source-range, block-cidrs, block-user-agents, block-referers): their default would let in the clients they keep out, so an invalid value makes every location the key applies to answer 403 (docs/compatibility.md).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Key | Status | Default | Value / note |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, k := range statuses {
		note := k.Note
		if k.Implemented {
			note = k.Rule
			if k.Note != "" {
				note = k.Note + "; " + k.Rule
			}
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", k.Key, statusLabel[k.Status], mdCode(k.Default), mdCell(note))
	}
}

// mdCode shows a default as code, or a dash when it is empty.
func mdCode(s string) string {
	switch s {
	case "", `""`:
		return "—"
	}
	return "`" + mdCell(s) + "`"
}

// statusLabel is how docs/configmap.md names each status.
var statusLabel = map[string]string{
	"implemented": "implemented",
	"ignored":     "not supported",
	"removed":     "removed upstream",
	"refused":     "refused",
}
