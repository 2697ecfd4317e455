"""Java the lab runs inside Spark's driver, compiled there by Janino: the compiler Spark ships and generates its own code with, so no
build step or JDK is needed (the SQL plan walk, the heap's watch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["new_compiled"]


def new_compiled(context: Any, source: Path, name: str) -> Any:
    """A new instance (by its constructor without arguments) of the class ``name`` compiled from ``source`` in ``context``'s JVM (a
    SparkContext's), by a class loader whose parent is the calling thread's, so Spark's classes are seen."""
    jvm, gateway = context._jvm, context._gateway
    compiler = jvm.org.codehaus.janino.SimpleCompiler()
    compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
    compiler.cook(source.read_text())
    found = compiler.getClassLoader().loadClass(name)
    return found.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0)).newInstance(gateway.new_array(jvm.java.lang.Object, 0))
