"""Every fixture gives the inventory it expects, every fault its state and recovery, and the rest rayaccel holds
every plugin to: the testing kit's common tests (rayaccel.testing; parametrised over src/.../fixtures)."""

from rayaccel.testing import plugin_suite

from {{ cookiecutter.__module }} import plugin

TestPlugin = plugin_suite(plugin)
