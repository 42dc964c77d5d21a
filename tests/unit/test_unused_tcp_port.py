"""The unreachable-port fixture: refused for the whole test, and nobody else's to take meanwhile."""

import socket

import pytest


def test_a_connection_to_the_unused_port_is_refused(unused_tcp_port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client, pytest.raises(ConnectionRefusedError):
        client.connect(("127.0.0.1", unused_tcp_port))


def test_no_other_socket_can_take_the_unused_port_during_the_test(unused_tcp_port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other, pytest.raises(OSError, match="in use"):
        other.bind(("127.0.0.1", unused_tcp_port))
