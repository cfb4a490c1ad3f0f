"""kipwire.mockbroker: a mock KRaft controller and mock brokers for integration tests."""
