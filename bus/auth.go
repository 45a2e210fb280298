package bus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// A bus that anyone can reach is a bus that is locked. The tables hold TLS
// private keys and password hashes, and the applier turns what the
// renderer publishes into a running NGINX: a client that could read the
// streams would read the keys, one that could publish the renderer's
// subjects would run its own configuration. So whenever the bus is
// reachable from outside the process, every client authenticates with an
// NKey of its own identity, and each identity may publish only its own
// subjects and read only the tables it needs (the access table below).
// The applier then never sees a renderer message that the renderer's
// identity did not publish: nobody else may publish there.

// IdentityTrace is `switchyard trace`: it reads the headers of every
// message, never a payload (see TraceRoot), and publishes nothing.
const IdentityTrace = "trace"

// Identities are the bus identities: one per stage, the webhook, trace.
var Identities = append(slices.Clone(Stages), StageWebhook, IdentityTrace)

// TraceRoot is where the writer of every table message also sends its
// headers without its payload. Only what trace needs is there: subject, stage,
// generation, times; never a value, so never Secret data.
const TraceRoot = "switchyard-trace." + SchemaVersion

// TraceSubject is the headers-only copy of subject.
func TraceSubject(subject string) string {
	return TraceRoot + strings.TrimPrefix(subject, Root)
}

// access says which tables an identity writes and which it reads. A
// table is a stage's stream (refusals included).
type access struct {
	writes, reads []string
	// subscribes are plain (non-stream) subjects it follows.
	subscribes []string
	// lease: its replicas take turns by its key in LeaseBucket
	// (RunWithLease); it may write that key only.
	lease bool
}

var accessOf = map[string]access{
	// The watcher also writes Ingress status, which follows the annotated
	// table, the refusals and the applier's results (internal/status).
	StageWatcher: {writes: []string{StageWatcher},
		reads: []string{StageAnnotations, TableRefusals, StageApplier}, subscribes: []string{ApplyResultSubject}, lease: true},
	StageTranslator:  {writes: []string{StageTranslator}, reads: []string{StageWatcher}, lease: true},
	StageAnnotations: {writes: []string{StageAnnotations}, reads: []string{StageTranslator}, lease: true},
	StageRenderer:    {writes: []string{StageRenderer}, reads: []string{StageAnnotations, TableRefusals}, lease: true},
	// The applier's metrics (--metrics-addr) follow the annotated table
	// (certificates, orphans) and the results it publishes.
	StageApplier: {writes: []string{StageApplier, TableRefusals}, reads: []string{StageRenderer, StageAnnotations},
		subscribes: []string{ApplyResultSubject}},
	StageWebhook:  {reads: []string{StageWatcher}},
	IdentityTrace: {subscribes: []string{TraceRoot + ".>"}},
}

// Permissions are what identity may publish and subscribe to on the bus.
// Replies come to an inbox of its own (InboxPrefix), so no identity reads
// another's answers from JetStream.
func Permissions(identity string) (*server.Permissions, error) {
	a, ok := accessOf[identity]
	if !ok {
		return nil, fmt.Errorf("unknown bus identity %q (identities: %v)", identity, Identities)
	}
	var pub []string
	for _, t := range a.writes {
		// A writer also sends its messages' headers to trace (traceCopy).
		pub = append(pub, StageSubject(t)+".>", TraceSubject(StageSubject(t))+".>", "$JS.API.STREAM.UPDATE."+StreamName(t))
	}
	for _, t := range unique(a.writes, a.reads) {
		pub = append(pub, readStream(StreamName(t))...)
	}
	if a.lease {
		pub = append(pub, leaseSubjects(identity)...)
	}
	if len(pub) > 0 {
		pub = append(pub, "$JS.API.INFO")
	}
	sub := append([]string{InboxPrefix(identity) + ".>"}, a.subscribes...)
	p := &server.Permissions{Subscribe: &server.SubjectPermission{Allow: sub}}
	if len(pub) > 0 {
		p.Publish = &server.SubjectPermission{Allow: pub}
	} else {
		p.Publish = &server.SubjectPermission{Deny: []string{">"}}
	}
	return p, nil
}

// readStream are the JetStream API subjects a reader of stream s needs:
// create it if it is first (with the one configuration every stage
// uses), look it up, follow it with an ordered consumer, read a message.
func readStream(s string) []string {
	return []string{
		"$JS.API.STREAM.CREATE." + s, "$JS.API.STREAM.INFO." + s,
		"$JS.API.CONSUMER.CREATE." + s, "$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.INFO." + s + ".>", "$JS.API.CONSUMER.DELETE." + s + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + s + ".>",
		"$JS.API.STREAM.MSG.GET." + s, "$JS.API.DIRECT.GET." + s, "$JS.API.DIRECT.GET." + s + ".>",
	}
}

// Leased says whether replicas of stage take turns by a lease
// (RunWithLease): every stage that publishes a table but the applier,
// whose replicas each run their own NGINX.
func Leased(stage string) bool { return accessOf[stage].lease }

// leaseSubjects let identity open (or create) the lease bucket, read its
// own lease and write it; no other stage's.
func leaseSubjects(identity string) []string {
	key := "$KV." + LeaseBucket + "." + identity
	return []string{
		key, "$JS.API.STREAM.CREATE." + leaseStream, "$JS.API.STREAM.INFO." + leaseStream,
		"$JS.API.DIRECT.GET." + leaseStream + "." + key, "$JS.API.STREAM.MSG.GET." + leaseStream,
	}
}

func unique(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// InboxPrefix is where identity's replies arrive.
func InboxPrefix(identity string) string { return "_INBOX_" + strings.ToUpper(EscapeToken(identity)) }

// BusKeys are the NKey seeds of the bus identities, as `switchyard
// buskeys` writes them: DIR/<identity>.nk, readable by its owner only.
// A server needs only the public keys, which it derives.

// SeedFile is the file of identity's seed in dir.
func SeedFile(dir, identity string) string { return filepath.Join(dir, identity+".nk") }

// GenerateKeys writes a new seed for every identity that has none in dir.
func GenerateKeys(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("bus keys: %w", err)
	}
	for _, id := range Identities {
		path := SeedFile(dir, id)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		kp, err := nkeys.CreateUser()
		if err != nil {
			return fmt.Errorf("bus key of %s: %w", id, err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return fmt.Errorf("bus key of %s: %w", id, err)
		}
		if err := os.WriteFile(path, append(seed, '\n'), 0o600); err != nil {
			return fmt.Errorf("bus key of %s: %w", id, err)
		}
	}
	return nil
}

// PublicKeyFile is the file of identity's public key in dir, which
// buskeys writes next to the seed: a bus node needs these alone.
func PublicKeyFile(dir, identity string) string { return filepath.Join(dir, identity+".pub") }

// PublicKeys returns each identity's public key, derived from its seed in
// dir or, without a seed, read from its public key file (a bus node's
// mount). An identity with neither gets no access; a dir without any is
// an error (a bus nobody may use is a mistake, not a setting).
func PublicKeys(dir string) (map[string]string, error) {
	keys := map[string]string{}
	for _, id := range Identities {
		pub, err := publicKeyOf(dir, id)
		if err != nil {
			return nil, err
		}
		if pub != "" {
			keys[id] = pub
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("bus keys: no <identity>.nk or <identity>.pub in %s (create them with switchyard buskeys %s)", dir, dir)
	}
	return keys, nil
}

// publicKeyOf is id's public key in dir, "" when dir has none.
func publicKeyOf(dir, id string) (string, error) {
	seed, err := os.ReadFile(SeedFile(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		data, err := os.ReadFile(PublicKeyFile(dir, id))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		pub := strings.TrimSpace(string(data))
		if err == nil && !nkeys.IsValidPublicUserKey(pub) {
			err = fmt.Errorf("%s: not an NKey user public key", PublicKeyFile(dir, id))
		}
		if err != nil {
			return "", fmt.Errorf("bus key of %s: %w", id, err)
		}
		return pub, nil
	}
	if err != nil {
		return "", fmt.Errorf("bus key of %s: %w", id, err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return "", fmt.Errorf("bus key of %s in %s: not an NKey seed", id, SeedFile(dir, id))
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("bus key of %s: %w", id, err)
	}
	return pub, nil
}

// WritePublicKeys writes each identity's public key file in dir from its
// seed there.
func WritePublicKeys(dir string, keys map[string]string) error {
	for id, pub := range keys {
		if err := os.WriteFile(PublicKeyFile(dir, id), []byte(pub+"\n"), 0o644); err != nil {
			return fmt.Errorf("bus key of %s: %w", id, err)
		}
	}
	return nil
}

// NkeyUsers are the server's users for the given public keys.
func NkeyUsers(keys map[string]string) ([]*server.NkeyUser, error) {
	var users []*server.NkeyUser
	for _, id := range Identities {
		pub, ok := keys[id]
		if !ok {
			continue
		}
		p, err := Permissions(id)
		if err != nil {
			return nil, err
		}
		users = append(users, &server.NkeyUser{Nkey: pub, Permissions: p})
	}
	return users, nil
}

// ServerConfig is the authorization block of a nats-server configuration
// file for an external NATS cluster: the same users and permissions the
// embedded server uses (NkeyUsers).
func ServerConfig(keys map[string]string) (string, error) {
	users, err := NkeyUsers(keys)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Switchyard's bus identities (switchyard buskeys): include this file\n")
	b.WriteString("# in the nats-server configuration of every node of the cluster.\n")
	b.WriteString("authorization {\n  users = [\n")
	for i, u := range users {
		fmt.Fprintf(&b, "    # %s\n    { nkey: %s, permissions: {\n", identityOf(keys, u.Nkey), u.Nkey)
		writeSubjects(&b, "publish", u.Permissions.Publish)
		writeSubjects(&b, "subscribe", u.Permissions.Subscribe)
		b.WriteString("    } }")
		if i < len(users)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

func identityOf(keys map[string]string, pub string) string {
	for id, k := range keys {
		if k == pub {
			return id
		}
	}
	return ""
}

func writeSubjects(b *strings.Builder, what string, p *server.SubjectPermission) {
	quote := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = `"` + s + `"`
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	fmt.Fprintf(b, "      %s: {", what)
	if len(p.Allow) > 0 {
		fmt.Fprintf(b, " allow: %s", quote(p.Allow))
	}
	if len(p.Deny) > 0 {
		fmt.Fprintf(b, " deny: %s", quote(p.Deny))
	}
	b.WriteString(" }\n")
}

// ClientOptions authenticate a connection as identity with the seed in
// seedFile, replies to its own inbox.
func ClientOptions(identity, seedFile string) ([]nats.Option, error) {
	if _, ok := accessOf[identity]; !ok {
		return nil, fmt.Errorf("unknown bus identity %q (identities: %v)", identity, Identities)
	}
	auth, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		return nil, fmt.Errorf("bus key %s: %w", seedFile, err)
	}
	return []nats.Option{auth, nats.CustomInboxPrefix(InboxPrefix(identity))}, nil
}
