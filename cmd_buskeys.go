package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: switchyard buskeys DIR\n\n"+
			"Creates DIR/<identity>.nk (a seed, mode 0600) for each of", bus.Identities, "and writes DIR/"+busKeysFile+".\n"+
			"Give each stage only its own seed (switchyard stage NAME --nats-keys DIR); run --nats-listen ADDR --nats-keys DIR\n"+
			"admits exactly these identities; an external nats-server includes "+busKeysFile+".")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("buskeys: one directory expected")
	}
	dir := fs.Arg(0)
	if err := bus.GenerateKeys(dir); err != nil {
		return err
	}
	keys, err := bus.PublicKeys(dir)
	if err != nil {
		return err
	}
	conf, err := bus.ServerConfig(keys)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, busKeysFile)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("buskeys: %w", err)
	}
	fmt.Printf("bus keys in %s; nats-server authorization in %s\n", dir, path)
	return nil
}
