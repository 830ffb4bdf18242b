"""The Runner-equivalence harness: an unchanged ADK ``Runner`` on a scripted, recorded model.

* :mod:`.recorder`: every ``LlmRequest.contents`` a model receives, as JSON;
* :mod:`.scripted_model`: a ``BaseLlm`` whose answer depends only on its request
  (text, calls to real tools, ``transfer_to_agent``);
* :mod:`.agents`: a coordinator with two sub-agents and their tools, as an ``App``
  with or without ADK-owned sliding-window compaction (:mod:`.summarizer`);
* :mod:`.script`: the turns, driven through ``Runner.run_async`` on any session service;
* :mod:`.normalize`: what two runs must share (call ids aside; summaries by the
  range of events they cover, for runs compacted by different summarizers).
"""
