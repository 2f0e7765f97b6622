"""Query-side stop words. Documents keep every word (phrases need them); queries drop these.

English words are compared in lowercase before stemming, with apostrophes removed the way
the tokenizer glues contractions (don't -> dont). CJK lists hold function words that a
segmenter (or the script splitter) leaves behind in questions.
"""

from __future__ import annotations

# Contractions whose apostrophe-less form is also a word (she'll/shell, he'll/hell, I'd/ID,
# I'll/ill, she'd/shed, we'd/wed) are deliberately absent: dropping "shell" or "ID" would lose
# real query words.
ENGLISH = frozenset(
    """
    a about above after again against all also am an and any are aren arent as at
    be because been before being below between both but by
    can cannot cant could couldnt couldve
    d did didnt do does doesnt doing dont down during
    each either else ever every
    few for from further
    get gets getting got gotten
    had hadnt has hasnt have havent having he hed hes her here heres hers herself him
    himself his how hows however
    i if im in into is isnt it its itself ive
    just
    let lets ll
    m may me might mightnt more most much must mustnt my myself
    neither no nor not now
    of off oh ok okay on once one only or other ought our ours ourselves out over own
    please
    re really
    s same shall shant she shes should shouldnt shouldve so some such
    t than that thats the their theirs them themselves then there theres these they theyd
    theyll theyre theyve this those though through thus to too
    under until up upon us
    ve very
    was wasnt we well were werent weve what whats whatever when whens where wheres
    whether which while who whod whoever whole whom whos whose why whys will with within
    without wont would wouldnt wouldve
    yeah yes yet you youd youll your youre yours yourself yourselves youve
    anyone anything anybody someone something somebody everyone everything
    kind kinds sort type types way ways thing things
    many several lot lots
    tell told say said ask asked know knew think thought mention mentioned
    """.split()
)

# Chinese function words and question words (single characters are dropped separately).
CHINESE = frozenset(
    """
    的 了 着 过 是 在 有 和 与 及 或 就 不 也 都 还 又 很 吗 呢 吧 啊 呀 嘛 么 个 之 把 被 让 给
    对 从 向 到 去 来 说 要 会 能 可以 应该 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们
    自己 这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 什么 怎么 怎样 怎么样 为什么 哪 哪里
    哪儿 哪个 哪些 谁 几 多少 时候 什么时候 一个 一下 一些 有没有 是不是 没有 已经 因为 所以
    但是 而且 如果 然后 还是 或者 就是 知道 告诉 请 帮 帮我
    """.split()
)

# Japanese: interrogatives and common function words that survive the script split.
JAPANESE = frozenset(
    """
    何 誰 私 僕 俺 あなた これ それ あれ どれ ここ そこ どこ いつ なに なん です ます でした
    ました ません ですか ますか した する して しました ある いる あります います ください
    について という どう どんな どうして なぜ
    """.split()
)

# Korean: pronouns and question words (particles are stripped separately).
KOREAN = frozenset(
    """
    나 너 저 제 내 네 우리 저희 그 이 그것 이것 저것 무엇 뭐 뭐가 뭘 언제 어디 어디서 누구 누가
    왜 어떻게 어떤 몇 있어요 있나요 했어요 해요 했나요 인가요 입니까 합니까
    """.split()
)

# Korean particles (josa) stripped from the end of a query word, longest first.
KOREAN_PARTICLES = tuple(
    sorted(
        """
        에서는 에게서 으로는 으로도 에서도 에서 에게 한테 으로 까지 부터 처럼 보다 하고 이랑 이나
        은 는 이 가 을 를 에 의 로 와 과 도 만 랑 요
        """.split(),
        key=len,
        reverse=True,
    )
)

CJK = CHINESE | JAPANESE | KOREAN
