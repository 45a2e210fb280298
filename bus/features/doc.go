// Package features defines the typed features annotation plugins return
// (canary, auth, rate limit, redirect, rewrite, balancing, …) with the
// whole-string checks every value passes before it reaches NGINX.
//
// It is a leaf: it imports the standard library only. The plugin SDK
// (package plugins) re-exports it so that a third-party plugin links no
// bus, NATS, client-go or zap; package bus re-exports every name with
// type aliases, so the stages use bus.Features as before. Behaviour that
// only one stage needs (applying balancing to a backend, writing an
// htpasswd file) belongs to that stage, not here.
package features
