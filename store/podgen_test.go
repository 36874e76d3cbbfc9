package store

import (
	"fmt"
	"strconv"
	"time"
)

// fakePod generates the revisions of one pod as the API server would serve
// them: compact JSON in the field order of the Go types, managedFields kept,
// about 3 KB. Each call to next changes what a real pod's next revision
// changes: resourceVersion, a managedFields timestamp, conditions and
// container statuses.
type fakePod struct {
	ns, name, uid, rsName, rsUID, node, ip string
	created                                time.Time
	rev                                    int
	rv                                     *int // shared resourceVersion counter
}

var genEpoch = time.Date(2025, 12, 1, 2, 30, 0, 0, time.UTC)

// newFakePod returns pod i of a ReplicaSet in ns; rv is the cluster-wide
// resourceVersion counter shared by all generated objects.
func newFakePod(i int, ns string, rv *int) *fakePod {
	rs := i / 500 // 500 replicas per ReplicaSet
	return &fakePod{
		ns:      ns,
		name:    fmt.Sprintf("web-7d9f8b6c5-%05x", i*7919%1048573),
		uid:     fakeUID(uint64(i) + 1),
		rsName:  fmt.Sprintf("web-7d9f8b6c5%d", rs),
		rsUID:   fakeUID(uint64(rs) + 1<<40),
		node:    fmt.Sprintf("kwok-node-%d", i%4),
		ip:      fmt.Sprintf("10.244.%d.%d", (i/250)%256, i%250+2),
		created: genEpoch.Add(time.Duration(i) * 37 * time.Millisecond),
		rv:      rv,
	}
}

// fakeUID makes a UUID-shaped, 36-byte UID from n.
func fakeUID(n uint64) string {
	h := n*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	l := (n ^ 0xD6E8FEB86659FD93) * 0xBF58476D1CE4E5B9
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, uint16(l>>48)&0xfff, l&0xffffffffffff)
}

// next returns the pod's next revision.
func (p *fakePod) next() []byte {
	*p.rv++
	r := p.rev
	p.rev++
	ts := func(d int) string {
		return p.created.Add(time.Duration(d) * time.Second).Format(time.RFC3339)
	}
	scheduled := r >= 1
	started := r >= 2
	restarts := 0
	if r > 3 {
		restarts = (r - 3) / 2
	}
	ready := started && r%2 == 0
	readyStr := "False"
	if ready {
		readyStr = "True"
	}
	b := make([]byte, 0, 4096)
	b = append(b, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"`...)
	b = append(b, p.name...)
	b = append(b, `","generateName":"web-7d9f8b6c5-","namespace":"`...)
	b = append(b, p.ns...)
	b = append(b, `","uid":"`...)
	b = append(b, p.uid...)
	b = append(b, `","resourceVersion":"`...)
	b = strconv.AppendInt(b, int64(*p.rv), 10)
	b = append(b, `","creationTimestamp":"`...)
	b = append(b, ts(0)...)
	b = append(b, `","labels":{"app":"web","pod-template-hash":"7d9f8b6c5","tier":"frontend"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"`...)
	b = append(b, p.rsName...)
	b = append(b, `","uid":"`...)
	b = append(b, p.rsUID...)
	b = append(b, `","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"`...)
	b = append(b, ts(0)...)
	b = append(b, `","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"`...)
	b = append(b, p.rsUID...)
	b = append(b, `\"}":{}}}}}`...)
	if started {
		b = append(b, `,{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"`...)
		b = append(b, ts(r*3)...)
		b = append(b, `","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"`...)
		b = append(b, p.ip...)
		b = append(b, `\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}`...)
	}
	b = append(b, `]},"spec":{"containers":[{"name":"app","image":"registry.example.com/team/web@sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},{"name":"sidecar","image":"registry.example.com/infra/proxy:v1.4.2","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default"`...)
	if scheduled {
		b = append(b, `,"nodeName":"`...)
		b = append(b, p.node...)
		b = append(b, '"')
	}
	b = append(b, `,"securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"`...)
	if started {
		b = append(b, `Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"`...)
		b = append(b, ts(2)...)
		b = append(b, `"},{"type":"Ready","status":"`...)
		b = append(b, readyStr...)
		b = append(b, `","lastProbeTime":null,"lastTransitionTime":"`...)
		b = append(b, ts(r*3)...)
		b = append(b, `"},{"type":"ContainersReady","status":"`...)
		b = append(b, readyStr...)
		b = append(b, `","lastProbeTime":null,"lastTransitionTime":"`...)
		b = append(b, ts(r*3)...)
		b = append(b, `"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"`...)
		b = append(b, ts(1)...)
		b = append(b, `"}],"hostIP":"172.18.0.`...)
		b = strconv.AppendInt(b, int64(p.rev%4+2), 10)
		b = append(b, `","podIP":"`...)
		b = append(b, p.ip...)
		b = append(b, `","podIPs":[{"ip":"`...)
		b = append(b, p.ip...)
		b = append(b, `"}],"startTime":"`...)
		b = append(b, ts(2)...)
		b = append(b, `","containerStatuses":[{"name":"app","state":{`...)
		if ready {
			b = append(b, `"running":{"startedAt":"`...)
			b = append(b, ts(r*3)...)
			b = append(b, `"}}`...)
		} else {
			b = append(b, `"waiting":{"reason":"CrashLoopBackOff","message":"back-off 5m0s restarting failed container=app pod=`...)
			b = append(b, p.name...)
			b = append(b, `"}}`...)
		}
		if restarts > 0 {
			b = append(b, `,"lastState":{"terminated":{"exitCode":1,"reason":"Error","startedAt":"`...)
			b = append(b, ts(r*3-5)...)
			b = append(b, `","finishedAt":"`...)
			b = append(b, ts(r*3-1)...)
			b = append(b, `","containerID":"containerd://`...)
			b = append(b, fakeUID(uint64(r))[:8]...)
			b = append(b, `"}}`...)
		} else {
			b = append(b, `,"lastState":{}`...)
		}
		b = append(b, `,"ready":`...)
		b = strconv.AppendBool(b, ready)
		b = append(b, `,"restartCount":`...)
		b = strconv.AppendInt(b, int64(restarts), 10)
		b = append(b, `,"image":"registry.example.com/team/web@sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff","imageID":"registry.example.com/team/web@sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff","containerID":"containerd://`...)
		b = append(b, fakeUID(uint64(r) + 77)[:24]...)
		b = append(b, `","started":`...)
		b = strconv.AppendBool(b, ready)
		b = append(b, `},{"name":"sidecar","state":{"running":{"startedAt":"`...)
		b = append(b, ts(3)...)
		b = append(b, `"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/infra/proxy:v1.4.2","imageID":"registry.example.com/infra/proxy@sha256:0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9","containerID":"containerd://`...)
		b = append(b, p.uid[:8]...)
		b = append(b, `","started":true}],"qosClass":"Burstable"}}`...)
		return b
	}
	b = append(b, `Pending"`...)
	if scheduled {
		b = append(b, `,"conditions":[{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"`...)
		b = append(b, ts(1)...)
		b = append(b, `"}]`...)
	}
	b = append(b, `,"qosClass":"Burstable"}}`...)
	return b
}

// record returns the pod's next revision as a Record.
func (p *fakePod) record(session uint32) Record {
	typ := Updated
	if p.rev == 0 {
		typ = Added
	}
	obj := p.next()
	return Record{
		Session:         session,
		Observed:        p.created.Add(time.Duration(p.rev) * 1500 * time.Millisecond),
		Type:            typ,
		APIVersion:      "v1",
		Kind:            "Pod",
		Namespace:       p.ns,
		Name:            p.name,
		UID:             p.uid,
		ResourceVersion: strconv.Itoa(*p.rv),
		Refs:            []string{p.rsUID},
		Object:          obj,
	}
}

// fakeEvent returns an Event about pod p, as the API server serves it.
func fakeEvent(p *fakePod, n int, session uint32) Record {
	*p.rv++
	name := fmt.Sprintf("%s.%016x", p.name, uint64(n)*0x9E3779B97F4A7C15>>4)
	uid := fakeUID(uint64(n) + 1<<50)
	at := p.created.Add(time.Duration(n%60) * time.Second).Format(time.RFC3339)
	reasons := []string{"Scheduled", "Pulled", "Created", "Started", "Killing", "BackOff"}
	reason := reasons[n%len(reasons)]
	obj := fmt.Sprintf(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"%s","namespace":"%s","uid":"%s","resourceVersion":"%d","creationTimestamp":"%s","managedFields":[{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"%s","fieldsType":"FieldsV1","fieldsV1":{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:reportingComponent":{},"f:reportingInstance":{},"f:source":{"f:component":{},"f:host":{}},"f:type":{}}}]},"involvedObject":{"kind":"Pod","namespace":"%s","name":"%s","uid":"%s","apiVersion":"v1","resourceVersion":"%d","fieldPath":"spec.containers{app}"},"reason":"%s","message":"Container image \"registry.example.com/team/web@sha256:4f1e2d3c\" already present on machine","source":{"component":"kubelet","host":"%s"},"firstTimestamp":"%s","lastTimestamp":"%s","count":1,"type":"Normal","eventTime":null,"reportingComponent":"kubelet","reportingInstance":"%s"}`,
		name, p.ns, uid, *p.rv, at, at, p.ns, p.name, p.uid, *p.rv-3, reason, p.node, at, at, p.node)
	return Record{
		Session:         session,
		Observed:        p.created.Add(time.Duration(n%60) * time.Second),
		Type:            Added,
		APIVersion:      "v1",
		Kind:            "Event",
		Namespace:       p.ns,
		Name:            name,
		UID:             uid,
		ResourceVersion: strconv.Itoa(*p.rv),
		Refs:            []string{p.uid},
		Object:          []byte(obj),
	}
}
