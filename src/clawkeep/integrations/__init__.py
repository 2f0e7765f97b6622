"""Adapters for agent frameworks (LangGraph, the OpenAI Agents SDK) over an Engine or a Client."""
