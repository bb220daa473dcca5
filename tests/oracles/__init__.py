"""Reference implementations (oracles) the tests compare against, one module per part."""
