package io.github.kraftacl.plugin;

/**
 * The name of a Kafka request from its API key, as Kafka's audit log prints it ({@code for request = Produce}).
 *
 * <p>Immutable. The table is the public Kafka protocol's API keys (kafka.apache.org/protocol, "Api Keys"),
 * indexed by key: Kafka's own table ({@code org.apache.kafka.common.protocol.ApiKeys}) is an internal class, which
 * a plugin must not use (KraftAclAuthorizerTest checks this table against it, key by key). A key added by a newer
 * Kafka than this table knows is named {@code ApiKey<n>}.
 */
final class RequestNames {
    private static final String[] NAMES = {
            "Produce", "Fetch", "ListOffsets", "Metadata", "LeaderAndIsr", "StopReplica", "UpdateMetadata",
            "ControlledShutdown", "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat",
            "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
            "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch", "AddPartitionsToTxn",
            "AddOffsetsToTxn", "EndTxn", "WriteTxnMarkers", "TxnOffsetCommit", "DescribeAcls", "CreateAcls",
            "DeleteAcls", "DescribeConfigs", "AlterConfigs", "AlterReplicaLogDirs", "DescribeLogDirs",
            "SaslAuthenticate", "CreatePartitions", "CreateDelegationToken", "RenewDelegationToken",
            "ExpireDelegationToken", "DescribeDelegationToken", "DeleteGroups", "ElectLeaders",
            "IncrementalAlterConfigs", "AlterPartitionReassignments", "ListPartitionReassignments", "OffsetDelete",
            "DescribeClientQuotas", "AlterClientQuotas", "DescribeUserScramCredentials", "AlterUserScramCredentials",
            "Vote", "BeginQuorumEpoch", "EndQuorumEpoch", "DescribeQuorum", "AlterPartition", "UpdateFeatures",
            "Envelope", "FetchSnapshot", "DescribeCluster", "DescribeProducers", "BrokerRegistration",
            "BrokerHeartbeat", "UnregisterBroker", "DescribeTransactions", "ListTransactions", "AllocateProducerIds",
            "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ControllerRegistration", "GetTelemetrySubscriptions",
            "PushTelemetry", "AssignReplicasToDirs", "ListConfigResources", "DescribeTopicPartitions",
            "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "AddRaftVoter",
            "RemoveRaftVoter", "UpdateRaftVoter", "InitializeShareGroupState", "ReadShareGroupState",
            "WriteShareGroupState", "DeleteShareGroupState", "ReadShareGroupStateSummary", "StreamsGroupHeartbeat",
            "StreamsGroupDescribe", "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
            "StreamsGroupTopologyDescriptionUpdate", "UnregisterController"
    };

    private RequestNames() {}

    /** The request's name, or {@code ApiKey<n>} for a key this table does not know. */
    static String of(int apiKey) {
        return apiKey >= 0 && apiKey < NAMES.length ? NAMES[apiKey] : "ApiKey" + apiKey;
    }

    /** How many API keys the table names (0 .. size-1). */
    static int size() {
        return NAMES.length;
    }
}
