// Package manifesttest holds test inputs shared by the manifest parser's
// tests and the manifests source's: Secret data that no error or log line
// may ever hold.
package manifesttest

// SecretMarker stands for Secret data: no error or log line may hold it.
const SecretMarker = "Sup3rS3cretMarker"

// SecretLeaks are broken Secrets whose data holds SecretMarker in every
// position a parser might quote: values, keys, anchors, names.
var SecretLeaks = []string{
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: " + SecretMarker + "!\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  key: [" + SecretMarker + "]\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: " + SecretMarker + "\n  key: " + SecretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  " + SecretMarker + ": 1\n  " + SecretMarker + ": 2\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: *" + SecretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: \"" + SecretMarker + "\\q\"\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: '" + SecretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: " + SecretMarker + "\n    more: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n" + SecretMarker + ": x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  " + SecretMarker + "/bad: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  ? [" + SecretMarker + "]\n  : x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + SecretMarker + "\nstringData:\n  key: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  creationTimestamp: " + SecretMarker + "\nstringData:\n  key: x\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: [" + SecretMarker + "]\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nimmutable: " + SecretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata: !!binary " + SecretMarker + "\n",
	"apiVersion: v1\nkind: " + SecretMarker + "\n---\nkind: Secret\ndata:\n  k: " + SecretMarker + "\n",
	"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: 12345" + SecretMarker + "\n\x00",
}
