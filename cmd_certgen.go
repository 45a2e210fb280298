package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"switchyard.dev/switchyard/internal/nginx"
)

// certgenCommand bootstraps the admission webhook's certificate, as
// ingress-nginx's kube-webhook-certgen Jobs do: `create` makes a
// self-signed certificate for the webhook Service in a Secret (once; an
// existing Secret is kept), `patch` puts that certificate in the caBundle of
// every webhook of a ValidatingWebhookConfiguration. The key is never printed.
func certgenCommand(args []string) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "patch") {
		return errors.New("usage: switchyard certgen create|patch --secret NAMESPACE/NAME [--host NAMES | --webhook NAME] [--kubeconfig FILE]")
	}
	action := args[0]
	var o options
	fs := flag.NewFlagSet("certgen "+action, flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster)")
	secret := fs.String("secret", "", "Secret NAMESPACE/NAME holding the webhook certificate (tls.crt, tls.key, ca.crt)")
	hosts := fs.String("host", "", "create: comma-separated DNS names of the webhook Service, e.g. switchyard-admission.switchyard-system.svc")
	webhook := fs.String("webhook", "", "patch: name of the ValidatingWebhookConfiguration")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ns, name, ok := strings.Cut(*secret, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--secret %q: want NAMESPACE/NAME", *secret)
	}
	client, err := o.kubeClient()
	if err != nil {
		return err
	}
	if client == nil {
		return errors.New("no cluster: give --kubeconfig or run in a pod")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if action == "create" {
		return createWebhookSecret(ctx, client, ns, name, splitList(*hosts))
	}
	if *webhook == "" {
		return errors.New("patch needs --webhook NAME")
	}
	return patchCABundle(ctx, client, ns, name, *webhook)
}

func createWebhookSecret(ctx context.Context, client kubernetes.Interface, ns, name string, hosts []string) error {
	if len(hosts) == 0 {
		return errors.New("create needs --host with the webhook Service's DNS names")
	}
	created, err := createSecretOnce(ctx, client, ns, name, corev1.SecretTypeTLS, func() (map[string][]byte, error) {
		certPEM, keyPEM, err := nginx.SelfSignedCertificate(hosts[0], hosts, time.Now())
		// The certificate is its own authority: the API server trusts it
		// through the caBundle and nothing else does.
		return map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": certPEM}, err
	})
	if created {
		fmt.Printf("Secret %s/%s created for %s\n", ns, name, strings.Join(hosts, ", "))
	}
	return err
}

// createSecretOnce creates Secret ns/name with the data build returns,
// unless it exists: an install Job run again keeps what the first made.
func createSecretOnce(ctx context.Context, client kubernetes.Interface, ns, name string, typ corev1.SecretType,
	build func() (map[string][]byte, error)) (bool, error) {
	secrets := client.CoreV1().Secrets(ns)
	if _, err := secrets.Get(ctx, name, metav1.GetOptions{}); err == nil {
		fmt.Printf("Secret %s/%s exists; kept\n", ns, name)
		return false, nil
	} else if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read Secret %s/%s: %w", ns, name, err)
	}
	data, err := build()
	if err != nil {
		return false, err
	}
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: typ, Data: data}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		fmt.Printf("Secret %s/%s exists; kept\n", ns, name)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create Secret %s/%s: %w", ns, name, err)
	}
	return true, nil
}

func patchCABundle(ctx context.Context, client kubernetes.Interface, ns, name, webhook string) error {
	secret, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Secret %s/%s: %w", ns, name, err)
	}
	ca := secret.Data["ca.crt"]
	if len(ca) == 0 {
		return fmt.Errorf("Secret %s/%s has no ca.crt", ns, name)
	}
	configs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg, err := configs.Get(ctx, webhook, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", webhook, err)
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig.CABundle = ca
	}
	if _, err := configs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update ValidatingWebhookConfiguration %s: %w", webhook, err)
	}
	fmt.Printf("ValidatingWebhookConfiguration %s: caBundle of %d webhook(s) set from Secret %s/%s\n", webhook, len(cfg.Webhooks), ns, name)
	return nil
}
