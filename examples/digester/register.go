package digester

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	// ConfigurationName is the default name of the MutatingWebhookConfiguration.
	ConfigurationName = "digester.example.com"
	// WebhookName is the default name of the webhook inside it.
	WebhookName = "digester.podtrace.dev"
	// NamespaceLabel and NamespaceLabelValue select the namespaces the
	// webhook intercepts, like the real digester's install.
	NamespaceLabel      = "digest-resolution"
	NamespaceLabelValue = "enabled"
)

// Options say where the webhook is served and how to name its configuration.
type Options struct {
	// URL is the webhook's address, as Server.URL gives it. Required.
	URL string
	// CABundle is the PEM CA the API server trusts for URL. Required.
	CABundle []byte
	// Name of the MutatingWebhookConfiguration; default ConfigurationName.
	Name string
	// WebhookName of the one webhook in it; default WebhookName.
	WebhookName string
}

// Register creates the MutatingWebhookConfiguration that sends pod CREATE and
// UPDATE requests in namespaces labelled digest-resolution=enabled to
// opts.URL, or updates it to that if it exists. The API server picks a
// change up within a second or so, not at once.
func Register(ctx context.Context, client kubernetes.Interface, opts Options) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if opts.URL == "" || len(opts.CABundle) == 0 {
		return nil, errors.New("register digester webhook: a URL and a CA bundle are required (take them from a started Server)")
	}
	want := configuration(opts)
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	var got *admissionregistrationv1.MutatingWebhookConfiguration
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got, err = api.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		current.Labels = want.Labels
		current.Webhooks = want.Webhooks
		got, err = api.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("register mutatingwebhookconfiguration %s: %w", want.Name, err)
	}
	return got, nil
}

// Unregister deletes the MutatingWebhookConfiguration named name (default
// ConfigurationName). One already gone is not an error.
func Unregister(ctx context.Context, client kubernetes.Interface, name string) error {
	if name == "" {
		name = ConfigurationName
	}
	err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("unregister mutatingwebhookconfiguration %s: %w", name, err)
	}
	return nil
}

// configuration builds the desired MutatingWebhookConfiguration.
func configuration(opts Options) *admissionregistrationv1.MutatingWebhookConfiguration {
	if opts.Name == "" {
		opts.Name = ConfigurationName
	}
	if opts.WebhookName == "" {
		opts.WebhookName = WebhookName
	}
	url := opts.URL
	failurePolicy := admissionregistrationv1.Ignore
	sideEffects := admissionregistrationv1.SideEffectClassNone
	reinvocation := admissionregistrationv1.NeverReinvocationPolicy
	matchPolicy := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(10)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   opts.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "digester"},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: opts.WebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      &url,
				CABundle: append([]byte(nil), opts.CABundle...),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{""},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       &scope,
				},
			}},
			NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{NamespaceLabel: NamespaceLabelValue},
			},
			FailurePolicy:           &failurePolicy,
			MatchPolicy:             &matchPolicy,
			SideEffects:             &sideEffects,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &reinvocation,
		}},
	}
}
