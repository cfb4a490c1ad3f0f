"""Reading: capture files and stream files to TCP segments, and TCP reassembly.

Standard library only (the codec is consulted lazily, and only to recognise a frame dump), and
no Kafka decoding: the decoding stage (`captures.decoding`) starts from what this stage gives.
"""
