package tracer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrForbidden is returned (wrapped) by Preflight when the user may not list
// and watch pods or events.
var ErrForbidden = errors.New("permission denied")

// forbiddenError is a required permission that is missing; it reads like
// kubectl's advice and matches ErrForbidden.
type forbiddenError struct{ msg string }

func (e *forbiddenError) Error() string        { return e.msg }
func (e *forbiddenError) Is(target error) bool { return target == ErrForbidden }

// Preflight asks the API server, with SelfSubjectAccessReviews, whether the
// user may list and watch each kind the tracer records. A missing permission
// for pods or events is an error that names the resource, the verbs and the
// kubectl command to check them; for any other kind it is a warning and the
// kind is not watched. Run calls Preflight if the caller did not.
func (t *Tracer) Preflight(ctx context.Context) error {
	served, err := t.discover(ctx)
	if err != nil {
		return err
	}
	type result struct {
		denied []string
		err    error
	}
	results := make([]result, len(t.kinds))
	var wg sync.WaitGroup
	for i, k := range t.kinds {
		if t.skip[k] {
			continue // not served
		}
		wg.Go(func() {
			for _, verb := range []string{"list", "watch"} {
				ok, err := t.allowed(ctx, k, verb)
				if err != nil {
					results[i].err = err
					return
				}
				if !ok {
					results[i].denied = append(results[i].denied, verb)
				}
			}
		})
	}
	wg.Wait()

	var errs []error
	var warnings []string
	for i, k := range t.kinds {
		r := results[i]
		if t.skip[k] {
			continue
		}
		if r.err != nil {
			// The API server cannot be asked: no point going on.
			return fmt.Errorf("check access to %s: %w", k.resource(), r.err)
		}
		if len(r.denied) == 0 {
			continue
		}
		where, flag := t.scope(k)
		msg := fmt.Sprintf("cannot %s %s %s", strings.Join(r.denied, " and "), k.resource(), where)
		check := fmt.Sprintf("kubectl auth can-i %s %s%s", r.denied[0], k.resource(), flag)
		if k.required {
			errs = append(errs, &forbiddenError{msg: fmt.Sprintf("%s: ask for list and watch on %s (%s)", msg, k.resource(), check)})
			continue
		}
		t.skip[k] = true
		k.skipped.Store(true)
		warnings = append(warnings, fmt.Sprintf("%s: not recording %s (%s)", msg, k.what, check))
	}
	warnings = append(served, warnings...)
	if len(errs) > 0 {
		// The missing required permissions are what to fix first.
		if hint := t.namespaceHint(ctx); hint != "" {
			errs = append(errs, &forbiddenError{msg: hint})
		}
		return errors.Join(errs...)
	}
	for _, w := range warnings {
		t.warn(w)
	}
	t.checked = true
	return nil
}

// discover asks the API server which of the ifServed kinds it serves and
// marks the others skipped: of the versions of one Kind, all but the first
// served. It returns a warning for each Kind served in no version.
func (t *Tracer) discover(ctx context.Context) ([]string, error) {
	served := map[string]map[string]bool{} // groupVersion -> resources
	watched := map[string]bool{}           // Kinds with a version served
	var tried []*kind
	for _, k := range t.kinds {
		if !k.ifServed {
			continue
		}
		gv := k.gvk.GroupVersion().String()
		if served[gv] == nil {
			list, err := t.client.ServerResourcesForGroupVersion(gv)
			switch {
			case apierrors.IsNotFound(err):
				served[gv] = map[string]bool{}
			case err != nil:
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("discover the resources of %s: %w", gv, err)
			default:
				served[gv] = map[string]bool{}
				for _, r := range list.APIResources {
					served[gv][r.Name] = true
				}
			}
		}
		if watched[k.gvk.Kind] || !served[gv][k.gvr.Resource] {
			t.skip[k] = true
		} else {
			watched[k.gvk.Kind] = true
		}
		tried = append(tried, k)
	}
	var warnings []string
	versions := map[string][]string{}
	var order []*kind
	for _, k := range tried {
		if watched[k.gvk.Kind] {
			continue
		}
		if versions[k.gvk.Kind] == nil {
			order = append(order, k)
		}
		versions[k.gvk.Kind] = append(versions[k.gvk.Kind], k.gvk.Version)
	}
	for _, k := range order {
		warnings = append(warnings, fmt.Sprintf("the API server does not serve %s in %s %s: not recording %s",
			k.gvr.Resource, k.gvk.Group, strings.Join(versions[k.gvk.Kind], ", "), k.what))
	}
	return warnings, nil
}

// Unrecorded returns the Kinds that Preflight found the tracer may not
// watch, or that the API server does not serve in any version the tracer
// knows, sorted; for the session, so that readers know what the trace
// cannot tell.
func (t *Tracer) Unrecorded() []string {
	watched := map[string]bool{}
	for _, k := range t.kinds {
		if !t.skip[k] {
			watched[k.gvk.Kind] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range t.kinds {
		if !watched[k.gvk.Kind] && !seen[k.gvk.Kind] {
			seen[k.gvk.Kind] = true
			out = append(out, k.gvk.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// scope describes where kind k is watched, in words and as kubectl flags.
func (t *Tracer) scope(k *kind) (where, flag string) {
	switch {
	case k.cluster:
		return "(cluster-scoped)", ""
	case t.opts.Namespace == "":
		return "in all namespaces", " -A"
	default:
		return "in namespace " + t.opts.Namespace, " -n " + t.opts.Namespace
	}
}

// allowed asks whether the user may do verb on kind k in the tracer's scope.
func (t *Tracer) allowed(ctx context.Context, k *kind, verb string) (bool, error) {
	ns := t.opts.Namespace
	if k.cluster {
		ns = ""
	}
	return t.allowedIn(ctx, k, verb, ns)
}

// namespaceHint, for a recording of all namespaces refused a required
// kind, tells whether the user may record the kubeconfig's namespace
// instead: with a Role, not a ClusterRole, that is all they can record.
func (t *Tracer) namespaceHint(ctx context.Context) string {
	ns := t.opts.DefaultNamespace
	if t.opts.Namespace != "" || ns == "" {
		return ""
	}
	for _, k := range t.kinds {
		if !k.required || k.cluster {
			continue
		}
		for _, verb := range []string{"list", "watch"} {
			if ok, err := t.allowedIn(ctx, k, verb, ns); err != nil || !ok {
				return ""
			}
		}
	}
	return fmt.Sprintf("you may list and watch pods and events in namespace %s (the kubeconfig's): record it with -n %s", ns, ns)
}

// allowedIn asks whether the user may do verb on kind k in namespace ns
// ("" for all namespaces or a cluster-scoped kind).
func (t *Tracer) allowedIn(ctx context.Context, k *kind, verb, ns string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns,
				Verb:      verb,
				Group:     k.gvr.Group,
				Version:   k.gvr.Version,
				Resource:  k.gvr.Resource,
			},
		},
	}
	res, err := t.client.ReviewAccess(ctx, review)
	if err != nil {
		return false, err
	}
	return res.Status.Allowed, nil
}
