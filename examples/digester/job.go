package digester

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const (
	// JobLabel is set on the job pod and each of its dependents, with the
	// job's name as value.
	JobLabel = "podtrace.dev/job"
	// CompleteAnnotation asks the control plane's kwok stages to finish the
	// pod; its value is the phase to end in ("succeeded" or "failed").
	CompleteAnnotation = "podtrace.dev/complete"

	// DefaultBuildImage and DefaultHelperImage are the images of the build
	// and helper containers, given by tag as a runner does.
	DefaultBuildImage  = "alpine:3.20"
	DefaultHelperImage = "registry.example.com/runner-helper:x86_64-v17.0.0"
)

// JobOptions describe one CI job.
type JobOptions struct {
	// Namespace the job runs in. Required.
	Namespace string
	// Name of the job pod; the dependents are named after it
	// (NAME-pull, NAME-scripts, NAME-svc). Required, unless GenerateName
	// is given.
	Name string
	// GenerateName, without a Name, has the API server make the pod's
	// name from it, as the runner does; the pull Secret, created first,
	// gets a name made from it too, and the ConfigMap and the Service are
	// named after the pod. The JobLabel value is GenerateName without its
	// trailing dashes.
	GenerateName string
	// BuildImage and HelperImage default to DefaultBuildImage and
	// DefaultHelperImage.
	BuildImage, HelperImage string
	// Complete is the CompleteAnnotation value; default "succeeded".
	Complete string
	// NodeSelector and Tolerations, if the cluster's nodes need them.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// SecretName, ConfigMapName and ServiceName name a job's dependents.
func SecretName(job string) string    { return job + "-pull" }
func ConfigMapName(job string) string { return job + "-scripts" }
func ServiceName(job string) string   { return job + "-svc" }

// RunJob does what the GitLab runner's kubernetes executor does to start a
// job, in its order: create the pull Secret; create the pod, which names the
// Secret in imagePullSecrets; give the Secret an ownerReference to the pod;
// create a ConfigMap and a Service, each owned by the pod. None of the
// ownerReferences blocks owner deletion, as with the runner. It returns the
// pod as the API server stored it, after admission.
func RunJob(ctx context.Context, client kubernetes.Interface, opts JobOptions) (*corev1.Pod, error) {
	if opts.Namespace == "" || opts.Name == "" && opts.GenerateName == "" {
		return nil, errors.New("run job: a namespace and a name (or a generateName) are required")
	}
	if opts.BuildImage == "" {
		opts.BuildImage = DefaultBuildImage
	}
	if opts.HelperImage == "" {
		opts.HelperImage = DefaultHelperImage
	}
	if opts.Complete == "" {
		opts.Complete = "succeeded"
	}
	job := opts.Name
	if job == "" {
		job = strings.TrimRight(opts.GenerateName, "-")
	}
	ns, labels := opts.Namespace, map[string]string{JobLabel: job}

	auth, err := dockerConfig("registry.example.com", "gitlab-ci-token", "fake-job-token-"+job)
	if err != nil {
		return nil, fmt.Errorf("run job %s/%s: %w", ns, job, err)
	}
	secretMeta := metav1.ObjectMeta{Name: SecretName(opts.Name), Labels: labels}
	if opts.Name == "" {
		secretMeta = metav1.ObjectMeta{GenerateName: opts.GenerateName, Labels: labels}
	}
	secret, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: secretMeta,
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: auth},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("run job %s/%s: create pull secret: %w", ns, job, err)
	}

	pod, err := client.CoreV1().Pods(ns).Create(ctx, jobPod(opts, labels, secret.Name), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("run job %s/%s: create pod: %w", ns, job, err)
	}
	job = pod.Name
	owners := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := secret.DeepCopy()
		s.OwnerReferences = owners
		_, err := client.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, getErr := client.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{}); getErr == nil {
				secret = fresh
			}
		}
		return err
	})
	if err != nil {
		return pod, fmt.Errorf("run job %s/%s: set owner of pull secret: %w", ns, job, err)
	}

	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(job), Labels: labels, OwnerReferences: owners},
		Data:       map[string]string{"detect_shell_script": "#!/bin/sh\nexec sh\n"},
	}, metav1.CreateOptions{})
	if err != nil {
		return pod, fmt.Errorf("run job %s/%s: create configmap: %w", ns, job, err)
	}
	_, err = client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(job), Labels: labels, OwnerReferences: owners},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "proxy", Port: 8080, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return pod, fmt.Errorf("run job %s/%s: create service: %w", ns, job, err)
	}
	return pod, nil
}

// jobPod is the pod a runner sends: build and helper containers with tagged
// images, the pull Secret, never restarted.
func jobPod(opts JobOptions, labels map[string]string, pullSecret string) *corev1.Pod {
	script := []string{"sh", "-c", "if [ -x /usr/local/bin/bash ]; then exec /usr/local/bin/bash; else exec sh; fi"}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         opts.Name,
			GenerateName: opts.GenerateName,
			Labels:       labels,
			Annotations:  map[string]string{CompleteAnnotation: opts.Complete},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:    corev1.RestartPolicyNever,
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: pullSecret}},
			NodeSelector:     opts.NodeSelector,
			Tolerations:      opts.Tolerations,
			Containers: []corev1.Container{
				{Name: "build", Image: opts.BuildImage, Command: script, Stdin: true},
				{Name: "helper", Image: opts.HelperImage, Command: script, Stdin: true},
			},
		},
	}
}

// dockerConfig is the .dockerconfigjson of one fake registry credential.
func dockerConfig(registry, user, password string) ([]byte, error) {
	type entry struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	}
	data, err := json.Marshal(map[string]map[string]entry{"auths": {registry: {
		Username: user,
		Password: password,
		Auth:     base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
	if err != nil {
		return nil, fmt.Errorf("encode registry credential: %w", err)
	}
	return data, nil
}

// DeleteJob deletes the job pod as the runner does when the job ends, with
// the given propagation policy (the runner used Foreground), on the
// condition that it is still the same pod.
func DeleteJob(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, propagation metav1.DeletionPropagation) error {
	uid := pod.UID
	err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		PropagationPolicy: &propagation,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if err != nil {
		return fmt.Errorf("delete job pod %s/%s (propagation %s): %w", pod.Namespace, pod.Name, propagation, err)
	}
	return nil
}

// EnsureNamespace creates the namespace if it does not exist, and labels it
// digest-resolution=enabled if digest is true or removes that label if not.
func EnsureNamespace(ctx context.Context, client kubernetes.Interface, name string, digest bool) (*corev1.Namespace, error) {
	api := client.CoreV1().Namespaces()
	var got *corev1.Namespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ns, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if digest {
				ns.Labels = map[string]string{NamespaceLabel: NamespaceLabelValue}
			}
			got, err = api.Create(ctx, ns, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Raced with another creator: go round again as an update.
				return apierrors.NewConflict(corev1.Resource("namespaces"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		_, has := ns.Labels[NamespaceLabel]
		switch {
		case digest && ns.Labels[NamespaceLabel] == NamespaceLabelValue, !digest && !has:
			got = ns
			return nil
		case digest:
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[NamespaceLabel] = NamespaceLabelValue
		default:
			delete(ns.Labels, NamespaceLabel)
		}
		got, err = api.Update(ctx, ns, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ensure namespace %s (digest resolution %t): %w", name, digest, err)
	}
	return got, nil
}
