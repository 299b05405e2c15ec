package podresources

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const (
	gpu0 = "GPU-00000000-0000-4000-8000-000000000000"
	gpu1 = "GPU-00000000-0000-4000-8000-000000000001"
	mig0 = "MIG-11111111-0000-4000-8000-000000000000"
)

// shortSocket is a socket path short enough for the 108-byte sun_path.
func shortSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "kubelet.sock")
}

func TestParseDeviceID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want Device
	}{
		{gpu0, Device{UUID: gpu0, Index: -1, Replica: -1, GI: -1, CI: -1, MIGIndex: -1}},
		{gpu0 + "::3", Device{UUID: gpu0, Index: -1, Replica: 3, GI: -1, CI: -1, MIGIndex: -1}},
		{mig0, Device{UUID: mig0, Index: -1, Replica: -1, MIG: true, GI: -1, CI: -1, MIGIndex: -1}},
		{"MIG-" + gpu1 + "/7/0", Device{UUID: "MIG-" + gpu1 + "/7/0", Index: -1, Replica: -1, MIG: true, Parent: gpu1, GI: 7, CI: 0, MIGIndex: -1}},
		{"2", Device{Index: 2, Replica: -1, GI: -1, CI: -1, MIGIndex: -1}},
		{"2::1", Device{Index: 2, Replica: 1, GI: -1, CI: -1, MIGIndex: -1}},
		{"0:1", Device{Index: 0, Replica: -1, MIG: true, GI: -1, CI: -1, MIGIndex: 1}},
	} {
		got, err := ParseDeviceID(c.id)
		if err != nil || got != c.want {
			t.Errorf("ParseDeviceID(%q) = %+v, %v; want %+v", c.id, got, err, c.want)
		}
		if got.Shared() != (c.want.MIG || c.want.Replica >= 0) {
			t.Errorf("%q: Shared() = %v", c.id, got.Shared())
		}
	}
	for _, bad := range []string{"", "nvidia0", gpu0 + "::x", gpu0 + "::-1", "GPU-12", "-1", "0:", "0:x", "0:-1", "MIG-" + gpu1 + "/7", "MIG-" + gpu1 + "/x/0"} {
		if _, err := ParseDeviceID(bad); err == nil {
			t.Errorf("ParseDeviceID(%q): no error", bad)
		}
	}
}

func TestMatchResource(t *testing.T) {
	pats := []string{"nvidia.com/gpu", "nvidia.com/mig-*"}
	for name, want := range map[string]bool{
		"nvidia.com/gpu": true, "nvidia.com/mig-1g.10gb": true, "nvidia.com/gpu.shared": false, "amd.com/gpu": false, "cpu": false,
	} {
		if got := MatchResource(name, pats); got != want {
			t.Errorf("MatchResource(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestClientListsFake(t *testing.T) {
	sock := shortSocket(t)
	f, err := NewFake(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.SetPods([]*v1.PodResources{
		{Namespace: "serve", Name: "llama-0", Containers: []*v1.ContainerResources{
			{Name: "vllm", Devices: []*v1.ContainerDevices{
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu0}},
				{ResourceName: "example.com/nic", DeviceIds: []string{"nic0"}},
			}},
			{Name: "sidecar"},
		}},
		{Namespace: "batch", Name: "small", Containers: []*v1.ContainerResources{
			{Name: "job", Devices: []*v1.ContainerDevices{{ResourceName: "nvidia.com/mig-1g.10gb", DeviceIds: []string{mig0}}}},
		}},
		{Namespace: "serve", Name: "tiny", Containers: []*v1.ContainerResources{
			{Name: "c", Devices: []*v1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu1 + "::0", gpu1 + "::1"}}}},
		}},
	})
	c, err := Dial(sock, []string{"nvidia.com/gpu", "nvidia.com/mig-*"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Allocation{
		{"batch", "small", "job", "nvidia.com/mig-1g.10gb", mig0},
		{"serve", "llama-0", "vllm", "nvidia.com/gpu", gpu0},
		{"serve", "tiny", "c", "nvidia.com/gpu", gpu1 + "::0"},
		{"serve", "tiny", "c", "nvidia.com/gpu", gpu1 + "::1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", got, want)
	}

	// Pods leave and appear.
	f.Set([]Allocation{{"serve", "llama-1", "vllm", "nvidia.com/gpu", gpu1}})
	got, err = c.List(context.Background())
	if err != nil || len(got) != 1 || got[0].Pod != "llama-1" {
		t.Errorf("after the change: %+v, %v", got, err)
	}
}

func TestClientFailures(t *testing.T) {
	t.Run("absent", func(t *testing.T) {
		c, err := Dial(shortSocket(t), []string{"nvidia.com/gpu"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.List(context.Background()); !errors.Is(err, ErrNoSocket) {
			t.Errorf("List on a missing socket: %v, want ErrNoSocket", err)
		}
	})
	t.Run("slow", func(t *testing.T) {
		sock := shortSocket(t)
		f, err := NewFake(sock)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.SetDelay(time.Minute)
		c, err := Dial(sock, []string{"nvidia.com/gpu"}, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.List(context.Background()); status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
			t.Errorf("List on a slow kubelet: %v, want DeadlineExceeded", err)
		}
	})
	t.Run("dying", func(t *testing.T) {
		sock := shortSocket(t)
		f, err := NewFake(sock)
		if err != nil {
			t.Fatal(err)
		}
		f.Set([]Allocation{{"a", "p", "c", "nvidia.com/gpu", gpu0}})
		c, err := Dial(sock, []string{"nvidia.com/gpu"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.List(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.List(context.Background()); err == nil {
			t.Error("List after the kubelet died: no error")
		}
		// It comes back on the same socket: the client reconnects.
		f2, err := NewFake(sock)
		if err != nil {
			t.Fatal(err)
		}
		defer f2.Close()
		f2.Set([]Allocation{{"a", "p2", "c", "nvidia.com/gpu", gpu0}})
		var got []Allocation
		for range 100 {
			if got, err = c.List(context.Background()); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil || len(got) != 1 || got[0].Pod != "p2" {
			t.Errorf("after the kubelet restarted: %+v, %v", got, err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		sock := shortSocket(t)
		lis, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		go func() {
			for {
				conn, err := lis.Accept()
				if err != nil {
					return
				}
				_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\nthis is not gRPC\x00\xff\xfe"))
				_ = conn.Close()
			}
		}()
		c, err := Dial(sock, []string{"nvidia.com/gpu"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.List(context.Background()); err == nil {
			t.Error("List on a socket answering garbage: no error")
		}
	})
}

func TestPodUID(t *testing.T) {
	root := t.TempDir()
	write := func(pid, content string) {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "cgroup"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_0000_4000_8000_00000000000a.slice/cri-containerd-abc.scope\n")
	write("11", "12:memory:/kubepods/besteffort/pod1b2c3d4e-0000-4000-8000-00000000000b/0123abcd\n0::/\n")
	write("12", "0::/user.slice/user-0.slice/session-1.scope\n")
	for pid, want := range map[uint32]string{10: "1b2c3d4e-0000-4000-8000-00000000000a", 11: "1b2c3d4e-0000-4000-8000-00000000000b", 12: ""} {
		if got, err := PodUID(root, pid); err != nil || got != want {
			t.Errorf("PodUID(%d) = %q, %v; want %q", pid, got, err, want)
		}
	}
	if _, err := PodUID(root, 99); err == nil {
		t.Error("PodUID of a missing process: no error")
	}
}

func TestCheckpointResolve(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubelet_internal_checkpoint")
	cp := `{"Data":{"PodDeviceEntries":[
	 {"PodUID":"uid-a","ContainerName":"vllm","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["` + gpu1 + `::0"]},"AllocResp":"eA=="},
	 {"PodUID":"uid-b","ContainerName":"sglang","ResourceName":"nvidia.com/gpu","DeviceIDs":["` + gpu1 + `::1"],"AllocResp":"eA=="},
	 {"PodUID":"uid-gone","ContainerName":"x","ResourceName":"nvidia.com/gpu","DeviceIDs":{"0":["` + gpu0 + `"]}}
	],"RegisteredDevices":{}},"Checksum":1}`
	if err := os.WriteFile(path, []byte(cp), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	allocs := []Allocation{
		{"serve", "a", "vllm", "nvidia.com/gpu", gpu1 + "::0"},
		{"serve", "b", "sglang", "nvidia.com/gpu", gpu1 + "::1"},
	}
	got := ResolveUIDs(entries, allocs)
	want := map[string][]PodRef{"uid-a": {{"serve", "a", "vllm"}}, "uid-b": {{"serve", "b", "sglang"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ResolveUIDs = %v, want %v", got, want)
	}
	if err := os.WriteFile(path, []byte(`{"Data":{"PodDeviceEntries":[{"PodUID":"u","DeviceIDs":7}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(path); err == nil {
		t.Error("a checkpoint with bad device ids: no error")
	}
	if _, err := ReadCheckpoint(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing checkpoint: no error")
	}
}

func TestParseSimAllocations(t *testing.T) {
	got, err := ParseSimAllocations("ns/pod-a=0,1; ns/pod-b=2 # comment", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []SimPod{{"ns", "pod-a", []int{0, 1}}, {"ns", "pod-b", []int{2}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	file := filepath.Join(t.TempDir(), "alloc")
	if err := os.WriteFile(file, []byte("# pods\nserve/a=3\nserve/b=0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ParseSimAllocations(file, 4); err != nil || len(got) != 2 || got[1].GPUs[1] != 1 {
		t.Errorf("from a file: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "pod=0", "ns/p=4", "ns/p=0;ns/q=0", "ns/p=x", "ns/=1", "ns/p/q=1"} {
		if _, err := ParseSimAllocations(bad, 4); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	a := SimAllocations(want, []string{gpu0, gpu1, "GPU-2", "GPU-3"})
	if len(a) != 3 || a[2].Pod != "pod-b" || a[2].DeviceID != "GPU-2" {
		t.Errorf("allocations %+v", a)
	}
}
