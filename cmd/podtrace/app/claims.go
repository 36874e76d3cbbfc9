package app

import (
	"bytes"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// claimInput adds to in what explain reads about the pod's claims: the
// history of each PersistentVolumeClaim its volumes name (persistentVolumeClaim
// and ephemeral volumes), the Events about each, and every StorageClass
// recorded. A pod that names no claim costs one decode of its last revision's
// volumes.
func (tc *traceContext) claimInput(db *store.DB, in *diff.Input) error {
	if len(in.Pod) == 0 {
		return nil
	}
	var p struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Volumes []corev1.Volume `json:"volumes"`
		} `json:"spec"`
	}
	last := in.Pod[len(in.Pod)-1]
	// Most pods name no claim: no decode for them.
	if !bytes.Contains(last.Object, []byte(`"persistentVolumeClaim"`)) && !bytes.Contains(last.Object, []byte(`"ephemeral"`)) {
		return nil
	}
	if json.Unmarshal(last.Object, &p) != nil {
		return nil
	}
	var names []string
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			// The ephemeral volume controller names the claim POD-VOLUME.
			names = append(names, p.Metadata.Name+"-"+v.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	in.Claims, in.ClaimEvents = map[string][]store.Record{}, map[string][]store.Record{}
	for _, name := range names {
		// The claim's latest incarnation in the pod's namespace.
		var claim *store.Object
		for i := range tc.claims {
			if o := &tc.claims[i]; o.Namespace == last.Namespace && o.Name == name && (claim == nil || o.FirstSeq > claim.FirstSeq) {
				claim = o
			}
		}
		if claim == nil {
			continue
		}
		recs, err := db.History(claim.UID)
		if err != nil {
			return err
		}
		in.Claims[claim.UID] = recs
		evs, err := tc.eventsAbout(db, claim.UID)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			in.ClaimEvents[claim.UID] = evs
		}
	}
	in.StorageClasses = map[string][]store.Record{}
	for _, o := range tc.classes {
		recs, err := db.History(o.UID)
		if err != nil {
			return err
		}
		in.StorageClasses[o.UID] = recs
	}
	return nil
}
