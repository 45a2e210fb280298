package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
)

// busKeysFile is the nats-server authorization buskeys writes next to
// the seeds.
const busKeysFile = "nats-auth.conf"

// busKeysCommand creates an NKey seed for every bus identity that has
// none in DIR (existing ones are kept), and writes DIR/nats-auth.conf:
// the authorization block a NATS cluster for split mode includes. Seeds
// are never printed.
func busKeysCommand(args []string) error {
	fs := flag.NewFlagSet("buskeys", flag.ContinueOnError)
	secret := fs.String("secret", "", "instead of DIR: create Secret NAMESPACE/NAME with the same files (once; an existing Secret is kept), as split mode's install Job does")
	kubeconfig := fs.String("kubeconfig", "", "with --secret: kubeconfig (default: in-cluster)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: switchyard buskeys DIR | --secret NAMESPACE/NAME\n\n"+
			"Creates DIR/<identity>.nk (a seed, mode 0600) for each of", bus.Identities, ", writes DIR/<identity>.pub (its public key), DIR/"+busKeysFile+"\n"+
			"and DIR/"+clusterPasswordFile+" (the NATS cluster's route password).\n"+
			"Give each stage only its own seed (switchyard stage NAME --nats-keys DIR); run --nats-listen ADDR --nats-keys DIR\n"+
			"admits exactly these identities; an external nats-server, or switchyard bus, includes "+busKeysFile+".")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret != "" {
		return busKeysSecret(*secret, *kubeconfig)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("buskeys: one directory expected")
	}
	dir := fs.Arg(0)
	if err := writeBusKeys(dir); err != nil {
		return err
	}
	fmt.Printf("bus keys in %s; nats-server authorization in %s\n", dir, filepath.Join(dir, busKeysFile))
	return nil
}

// clusterPasswordFile holds the password NATS cluster nodes authenticate
// their routes with (switchyard bus --cluster-password-file).
const clusterPasswordFile = "cluster.pass"

// writeBusKeys fills dir with the identities' seeds, the authorization
// and the route password, keeping what is there.
func writeBusKeys(dir string) error {
	if err := bus.GenerateKeys(dir); err != nil {
		return err
	}
	keys, err := bus.PublicKeys(dir)
	if err != nil {
		return err
	}
	if err := bus.WritePublicKeys(dir, keys); err != nil {
		return err
	}
	conf, err := bus.ServerConfig(keys)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, busKeysFile), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("buskeys: %w", err)
	}
	pass := filepath.Join(dir, clusterPasswordFile)
	if _, err := os.Stat(pass); err == nil {
		return nil
	}
	random := make([]byte, 24)
	if _, err := rand.Read(random); err != nil {
		return fmt.Errorf("buskeys: %w", err)
	}
	return os.WriteFile(pass, []byte(hex.EncodeToString(random)+"\n"), 0o600)
}

// busKeysSecret creates the Secret of split mode: every file writeBusKeys
// makes, by file name. Each stage's pod mounts only its own seed.
func busKeysSecret(ref, kubeconfig string) error {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--secret %q: want NAMESPACE/NAME", ref)
	}
	o := options{kubeconfig: kubeconfig}
	client, err := o.kubeClient()
	if err != nil {
		return err
	}
	if client == nil {
		return errors.New("no cluster: give --kubeconfig or run in a pod")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := createSecretOnce(ctx, client, ns, name, corev1.SecretTypeOpaque, func() (map[string][]byte, error) {
		dir, err := os.MkdirTemp("", "switchyard-buskeys-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := writeBusKeys(dir); err != nil {
			return nil, err
		}
		return readDirFiles(dir)
	})
	if created {
		fmt.Printf("Secret %s/%s created with the bus keys\n", ns, name)
	}
	return err
}

// readDirFiles reads every file of dir by name.
func readDirFiles(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for _, e := range entries {
		if data[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	return data, nil
}
