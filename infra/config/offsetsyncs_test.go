package config

import "testing"

func TestOffsetSyncs(t *testing.T) {
	for _, tt := range []struct {
		location string // offset-syncs.topic.location; "" leaves it unset
		want     OffsetSyncsLocation
	}{
		{"", OffsetSyncsLocation{Topic: "mm2-offset-syncs.us.internal", Alias: "eu", Reader: SourceConsumer}},
		{"source", OffsetSyncsLocation{Topic: "mm2-offset-syncs.us.internal", Alias: "eu", Reader: SourceConsumer}},
		{"target", OffsetSyncsLocation{Topic: "mm2-offset-syncs.eu.internal", OnTarget: true, Alias: "us", Reader: TargetConsumer}},
	} {
		t.Run("location="+tt.location, func(t *testing.T) {
			props := map[string]string{
				"source.cluster.alias":             "eu",
				"target.cluster.alias":             "us",
				"source.cluster.bootstrap.servers": "eu-kafka:9092",
				"target.cluster.bootstrap.servers": "us-kafka:9092",
			}
			if tt.location != "" {
				props["offset-syncs.topic.location"] = tt.location
			}
			cfg, _, err := FromProperties(props, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.OffsetSyncs()
			wantServers := map[string]string{"eu": "eu-kafka:9092", "us": "us-kafka:9092"}[tt.want.Alias]
			if servers := got.Cluster.BootstrapServers; len(servers) != 1 || servers[0] != wantServers {
				t.Errorf("cluster bootstrap servers %v, want [%s]", servers, wantServers)
			}
			if got.Topic != tt.want.Topic || got.OnTarget != tt.want.OnTarget || got.Alias != tt.want.Alias || got.Reader != tt.want.Reader {
				t.Errorf("OffsetSyncs() = {Topic:%s OnTarget:%v Alias:%s Reader:%v}, want %+v", got.Topic, got.OnTarget, got.Alias, got.Reader, tt.want)
			}
		})
	}
}
